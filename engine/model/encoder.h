#pragma once
// Engine-internal (includes torch): only engine/**/*.cpp may include this header.
// An encoder Φ maps texts (rows of a pre-tokenized corpus) to vectors in R^d; queries and labels share it.
#include <torch/torch.h>

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

class EncoderImpl : public torch::nn::Module {
 public:
  /// Encodes rows `rows` of `corpus`: returns [rows.size(), output_dim()] float32 on device().
  virtual torch::Tensor encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) = 0;
  virtual std::int64_t output_dim() const = 0;
  virtual torch::Device device() const = 0;
};

}  // namespace xmc
