#pragma once
// Engine-internal (includes torch). The `bow` encoder: a TF-IDF-weighted mean of word embeddings
// (EmbeddingBag) followed by a residual non-linear block, h + W2·GELU(W1·h), with W2 starting at zero
// so that training begins from the plain weighted mean. CPU-fast; the default encoder. Options make it a
// linear model over L2-normalised TF-IDF (l2 bag, no block): what wins on small, long-text sets like Bibtex.
#include <torch/torch.h>

#include <vector>

#include "engine/model/encoder.h"

namespace xmc {

struct BowEncoderOptions {
  std::int64_t vocab_size = 0;   ///< token ids are < vocab_size; ids 0 ([PAD]) and 1 ([UNK]) are ignored
  std::int64_t word_dim = 256;   ///< size of the word vectors
  std::int64_t dim = 256;        ///< output size (a projection is added when it differs from word_dim)
  std::vector<float> idf;        ///< inverse document frequency per token id (size vocab_size)
  bool l2_bag = false;           ///< TF-IDF weights with unit L2 norm per text instead of summing to 1
  bool residual_block = true;    ///< the residual block after the bag (off: a linear encoder)
  /// Instead, the reference script's block: h + ReLU(Linear(h)), the layer as torch initialises it (nonlinear from the
  /// first step, where the residual block starts as the identity).
  bool relu_block = false;
  double init_std = 1.0;         ///< word vectors start as N(0, init_std²)
  torch::Device device = torch::kCPU;
};

class BowEncoderImpl : public EncoderImpl {
 public:
  explicit BowEncoderImpl(BowEncoderOptions options);

  std::shared_ptr<const EncoderInput> prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                    bool for_training) const override;
  torch::Tensor encode_input(const EncoderInput& input) override;
  std::int64_t output_dim() const override { return options_.dim; }
  torch::Device device() const override { return options_.device; }

  /// Overwrites word vectors: rows[i] gets vectors[i] ([n x word_dim], row-major).
  void set_word_vectors(const std::vector<std::int64_t>& rows, const std::vector<float>& vectors);

 private:
  BowEncoderOptions options_;
  torch::Tensor idf_;
  torch::nn::EmbeddingBag embeddings_{nullptr};
  torch::nn::Linear projection_{nullptr};
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear residual_out_{nullptr};
  torch::nn::Linear relu_layer_{nullptr};
};
TORCH_MODULE(BowEncoder);

}  // namespace xmc
