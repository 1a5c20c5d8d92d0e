#pragma once
// Engine-internal (includes torch). Activation checkpointing (Chen et al. 2016; torch.utils.checkpoint): a
// block's forward runs without keeping its intermediate activations, only its input; backward runs the block
// again, with the graph, and back-propagates through that. Memory then grows with the number of blocks × their
// input, not with every block's attention scores and MLP activations, at the price of a second forward.
#include <torch/torch.h>

#include <vector>

namespace xmc {

/// A block that can be run twice with the same result: no state changes between runs.
class RecomputableBlock {
 public:
  virtual ~RecomputableBlock() = default;
  /// The block's output for input `x`; `context` holds tensors it reads but never differentiates (masks, rotary
  /// tables).
  virtual torch::Tensor run(const torch::Tensor& x, const std::vector<torch::Tensor>& context) = 0;
  /// The parameters the block trains (those whose gradients the recomputation must produce).
  virtual std::vector<torch::Tensor> trainable_parameters() = 0;
};

/// block.run(x, context), checkpointed when grad mode is on and x or a trainable parameter needs a gradient
/// (otherwise simply run). The recomputation runs under the autocast dtype `autocast` on `device` (kFloat: none)
/// and with the CPU generator as it was at the forward, so CPU dropout draws the same masks. The block must
/// outlive the backward pass.
torch::Tensor run_checkpointed(RecomputableBlock& block, const torch::Tensor& x, const std::vector<torch::Tensor>& context,
                               torch::Device device, torch::ScalarType autocast);

}  // namespace xmc
