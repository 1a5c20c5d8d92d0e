#pragma once
// Engine-internal (includes torch). Gradient-norm clipping that also takes row-sparse gradients (sparse COO,
// from a table whose picked rows are trained, model/table_rows.h): the norm of the summed rows, where
// LibTorch's clip_grad_norm_ would take the norm of an uncoalesced tensor's stored entries.
#include <torch/torch.h>

#include <vector>

namespace xmc {

/// Scales the parameters' gradients by min(1, max_norm / (‖g‖ + 1e-6)), ‖g‖ the L2 norm of all of them
/// together, as torch::nn::utils::clip_grad_norm_ does (same arithmetic, so the same bits for dense
/// gradients). Sparse gradients are coalesced in place first. Returns ‖g‖, a 0-dim tensor on the gradients' device:
/// on a GPU nothing in it waits for the device (no host synchronisation per step).
torch::Tensor clip_gradient_norm(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace xmc
