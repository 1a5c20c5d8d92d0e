#pragma once
// Engine-internal (includes torch). A row-sparse gradient in the one form the trainer's passes read: coalesced
// (rows ascending and distinct, each with its summed gradient).
#include <torch/torch.h>

namespace xmc {

/// `grad` coalesced. One whose rows are already ascending and distinct (what a picked table's gradient is,
/// even after LibTorch stored it without saying so) is only marked as such: no sort, no copy.
torch::Tensor coalesced(const torch::Tensor& grad);

}  // namespace xmc
