#pragma once
// Engine-internal (includes torch). Rows scaled to unit length, y = x / max(‖x‖, eps), as
// torch::nn::functional::normalize(x, dim = 1) computes them, in one pass forward and one backward.
//
// LibTorch composes normalize from a norm, a clamp, an expand and a division, and its backward from twice as
// many ops: on a [512 × 128] head output that is ~15 small ops and their thread hand-offs per use, and a
// UniDEC step normalises four such matrices. Here a CPU float matrix is normalised and differentiated in one
// parallel loop over rows each way; other tensors (CUDA, other dtypes) take the same formula as tensor ops.
#include <torch/torch.h>

namespace xmc {

/// x / max(‖x_i‖₂, eps) row by row, for a 2-D `x`; differentiable (first order). Its gradient is
/// (g − y·⟨g, y⟩) / ‖x‖ for rows with ‖x‖ ≥ eps and g / eps for the others, as normalize's.
torch::Tensor unit_rows(const torch::Tensor& x, double eps = 1e-8);

}  // namespace xmc
