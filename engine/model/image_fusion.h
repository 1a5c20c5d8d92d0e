#pragma once
// Engine-internal (includes torch). Image embeddings fused into a transformer encoder (ViXML): a learned linear
// map from the vision model's m numbers to the encoder's hidden size, whose outputs either join the text tokens
// inside the sequence (early fusion: after a BERT text's [SEP]; after a decoder text's "and its image:" and
// before its EOS) or are averaged and added to the pooled text vector (late fusion, MUFIN-like).
// The host side gathers a batch's images from the corpus's bank; the device side projects them.
#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

class ComponentConfig;

enum class ImageFusionKind { early, late };

struct ImageFusionOptions {
  std::int64_t max_images = 3;  ///< per item, at most
  ImageFusionKind kind = ImageFusionKind::early;
  std::int64_t image_dim = 0;   ///< m, the bank's embedding size
};

/// The fusion a run's config asks for on its dataset: images.max and images.fusion, with the banks' m; max_images
/// 0 (text only) when the dataset has no banks or images.max is 0.
ImageFusionOptions image_fusion_for(const ComponentConfig& config);
/// A line for the encoder's description: ", fusing up to 3 images (m = 768) early", or "" for text only.
std::string describe_image_fusion(const ImageFusionOptions& options);

/// A batch's images, as gathered on the host and staged to the encoder's device.
struct BatchImages {
  std::vector<std::int64_t> per_row;  ///< images of each batch row (host)
  torch::Tensor features;             ///< [N, m] float32, every row's images back to back (N = their sum)
  torch::Tensor rows;                 ///< [N] int64: the batch row of each image
  torch::Tensor positions;            ///< [N] int64: its position in the row's sequence (early fusion; set by the encoder)
  bool empty() const { return !features.defined() || features.size(0) == 0; }
};

/// The images of `rows` of `corpus` (none when the corpus carries no bank), at most `max_images` per row, on
/// the host. Throws ConfigError when the bank's m is not `image_dim` or a row is outside the bank.
BatchImages gather_batch_images(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows, std::int64_t max_images,
                                std::int64_t image_dim);

/// Moves a gathered batch's images to `device`, with `positions` ([N] int64, early fusion's places in the rows;
/// empty for late fusion), as the encoders stage their token ids. Nothing to do for a batch without images.
void stage_batch_images(BatchImages& images, const torch::Tensor& positions, const torch::Device& device);

class ImageProjectionImpl : public torch::nn::Module {
 public:
  /// Linear m -> hidden, initialised as the encoders' own linear layers (N(0, 0.02²), bias 0).
  ImageProjectionImpl(std::int64_t image_dim, std::int64_t hidden, torch::Device device);
  /// [N, m] -> [N, hidden].
  torch::Tensor forward(const torch::Tensor& features) { return linear_(features); }

 private:
  torch::nn::Linear linear_{nullptr};
};
TORCH_MODULE(ImageProjection);

/// Early fusion: `embeddings` [B, L, H] with each image's projection put at (rows[i], positions[i]).
torch::Tensor place_image_tokens(const torch::Tensor& embeddings, const BatchImages& images, ImageProjectionImpl& projection);
/// Late fusion: `pooled` [B, H] plus, for each row with images, the mean of their projections.
torch::Tensor add_pooled_images(const torch::Tensor& pooled, const BatchImages& images, ImageProjectionImpl& projection);

}  // namespace xmc
