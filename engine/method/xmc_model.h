#pragma once
// Engine-internal (includes torch). The trainable model of every method: a shared text encoder Φ, the
// DE head g1 (unit embeddings for queries and labels) and, for NGAME stage M4, classifier residuals η
// with w_l = g1(Φ(z_l)) + η_l. Plus the tokenizer that turns texts into the encoder's token ids.
#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/progress.h"
#include "engine/model/encoder.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/heads.h"
#include "engine/config/component_config.h"
#include "engine/text/text_tokenizer.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

/// How embeddings are made from the encoder's output: the DE head g1 = L2norm(Tanh(Linear)) (DEXML,
/// UniDEC), or the encoder's output L2-normalised as it is (NGAME's Siamese encoder).
enum class EmbeddingHead { TanhLinear, Normalize };

class XmcModelImpl : public torch::nn::Module {
 public:
  XmcModelImpl(std::shared_ptr<EncoderImpl> encoder, std::int64_t dim, double dropout, EmbeddingHead head = EmbeddingHead::TanhLinear);

  /// g1(Φ(rows of corpus)) (or normalize(Φ) without a DE head): [rows.size() x d], unit rows, with graph.
  torch::Tensor embed(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows);
  /// The host-side half of embed() for a training step, which may run ahead on another thread
  /// (EncoderImpl::prepare_input), and the rest.
  std::shared_ptr<const EncoderInput> prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) const {
    return encoder_->prepare_input(corpus, rows, /*for_training=*/true);
  }
  torch::Tensor embed_input(const EncoderInput& input) { return embed_encoded(encoder_->encode_input(input)); }
  /// EncoderImpl::join_inputs: two inputs embedded in one pass, or nullptr.
  std::shared_ptr<const EncoderInput> join_inputs(const EncoderInput& first, const EncoderInput& second) const {
    return encoder_->join_inputs(first, second);
  }
  /// The embedding of encoder outputs: g1(encoded), or normalize(encoded) without a DE head.
  torch::Tensor embed_encoded(const torch::Tensor& encoded);
  /// g1(Φ(rows of corpus)) without graph, in eval mode for the duration (a few rows for inspection).
  torch::Tensor embed_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows);
  /// Embeds every row in chunks without graph (eval mode for the duration): [corpus.size() x d], written into
  /// one matrix as the chunks come (never a second copy of it).
  torch::Tensor embed_all(const TokenizedCorpus& corpus, std::int64_t chunk = 1024);
  /// The same, reported to `progress` as task `task` (one unit per row), stored as `dtype` (default: the model's).
  torch::Tensor embed_all(const TokenizedCorpus& corpus, Progress& progress, std::string_view task, std::int64_t chunk = 1024,
                          std::optional<torch::ScalarType> dtype = std::nullopt);

  /// Adds classifier residuals η ([num_labels x d], zeros) for NGAME M4.
  void add_classifiers(std::int64_t num_labels);
  bool has_classifiers() const { return residuals_.defined(); }
  torch::Tensor& classifier_residuals() { return residuals_; }
  /// NGAME classifiers w_l = normalize(g1(Φ(z_l)) + η_l) of the labels `rows` (all labels when undefined),
  /// given their embeddings `label_embeddings` ([rows x d], or [L x d] for all). Differentiable in η.
  torch::Tensor classifiers(const torch::Tensor& label_embeddings, const torch::Tensor& rows = {});
  /// Fused NGAME label matrix: every row is unit-norm, so q·(w·W + (1-w)·E) = w·s_clf + (1-w)·s_emb.
  static torch::Tensor fuse(const torch::Tensor& classifiers, const torch::Tensor& label_embeddings, double weight);

  EncoderImpl& encoder() { return *encoder_; }
  DualEncoderHead& de_head() { return de_head_; }
  std::int64_t dim() const { return dim_; }
  EmbeddingHead head() const { return head_; }
  torch::Device device() const { return encoder_->device(); }

 private:
  std::shared_ptr<EncoderImpl> encoder_;
  DualEncoderHead de_head_{nullptr};  ///< null with EmbeddingHead::Normalize
  torch::Tensor residuals_;
  std::int64_t dim_;
  EmbeddingHead head_;
};
TORCH_MODULE(XmcModel);

struct BuiltModel {
  XmcModel model{nullptr};
  std::unique_ptr<TextTokenizer> tokenizer;
  std::string description;  ///< e.g. "bow: 21,304 words, d=256" for logs
};

/// Builds the model a config describes: the encoder `encoder.type` names (make_encoder(): `train_texts` and
/// `run_dir` are its to build or keep a vocabulary) under the embedding head `head`.
BuiltModel build_model(const ComponentConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir,
                       EmbeddingHead head = EmbeddingHead::TanhLinear);


}  // namespace xmc
