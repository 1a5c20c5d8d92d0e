#pragma once
// Engine-internal (includes torch): only engine/**/*.cpp may include this header.
// An encoder Φ maps texts (rows of a pre-tokenized corpus) to vectors in R^d; queries and labels share it.
#include <torch/torch.h>

#include <memory>
#include <span>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

/// A batch built on the host, moved to `device`. For a GPU through pinned (page-locked) memory, so the copy
/// runs asynchronously on the current stream instead of stalling the host; LibTorch's pinned allocator keeps
/// the staging buffer until the copy has run.
inline torch::Tensor staged_to(const torch::Tensor& host, const torch::Device& device) {
  if (!device.is_cuda()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

/// Rows of a corpus as an encoder reads them (token ids, offsets or masks), built on the host and queued for
/// the encoder's device: what a prefetching trainer builds for the next batch while the current one trains.
/// Each encoder has its own kind.
struct EncoderInput {
  virtual ~EncoderInput() = default;
};

class EncoderImpl : public torch::nn::Module {
 public:
  /// Encodes rows `rows` of `corpus`: returns [rows.size(), output_dim()] float32 on device().
  torch::Tensor encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
    return encode_input(*prepare_input(corpus, rows, /*for_training=*/false));
  }
  /// The host-side half of encode(): reads only the corpus and the encoder's options (never its parameters'
  /// values), so it may run on another thread while the encoder trains. `for_training` also prepares what a
  /// training step needs beyond the forward pass (the bow encoder's distinct words). Throws on a token id
  /// outside the vocabulary, naming it and its text.
  virtual std::shared_ptr<const EncoderInput> prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                            bool for_training) const = 0;
  /// The device half: `input` must come from this encoder's prepare_input().
  virtual torch::Tensor encode_input(const EncoderInput& input) = 0;
  /// `first` and `second` (both from prepare_input()) as one input whose encoding is `first`'s rows then
  /// `second`'s, for a training step that encodes queries and labels with the same weights: one pass instead
  /// of two halves the kernels a GPU runs and sums each weight's gradient once. nullptr when this encoder
  /// cannot, or when joining would cost more than it saves (then encode them one after the other).
  virtual std::shared_ptr<const EncoderInput> join_inputs(const EncoderInput& /*first*/, const EncoderInput& /*second*/) const {
    return nullptr;
  }
  virtual std::int64_t output_dim() const = 0;
  virtual torch::Device device() const = 0;
  /// Whether a CPU step of this encoder is mostly a few large matrix products (a transformer's), which the BLAS
  /// should split across the cores, rather than many small operations that LibTorch's own threads split
  /// (engine/model/cpu_thread_policy.h).
  virtual bool large_products() const { return false; }
};

/// The first module of kind `Encoder` (EncoderImpl, or one encoder's own class) in `model`'s tree, `model`
/// itself included; nullptr when there is none.
template <class Encoder = EncoderImpl>
Encoder* find_encoder(torch::nn::Module& model) {
  if (auto* own = dynamic_cast<Encoder*>(&model)) return own;
  for (const auto& child : model.modules(/*include_self=*/false))
    if (auto* encoder = dynamic_cast<Encoder*>(child.get())) return encoder;
  return nullptr;
}

}  // namespace xmc
