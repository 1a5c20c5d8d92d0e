#pragma once
// Engine-internal (includes torch): only engine/**/*.cpp may include this header.
// An encoder Φ maps texts (rows of a pre-tokenized corpus) to vectors in R^d; queries and labels share it.
#include <torch/torch.h>

#include <span>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

class EncoderImpl : public torch::nn::Module {
 public:
  /// Encodes rows `rows` of `corpus`: returns [rows.size(), output_dim()] float32 on device().
  virtual torch::Tensor encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) = 0;
  virtual std::int64_t output_dim() const = 0;
  virtual torch::Device device() const = 0;
};

}  // namespace xmc
