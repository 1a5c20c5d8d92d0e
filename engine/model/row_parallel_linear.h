#pragma once
// Engine-internal (includes torch). y = x·Wᵀ + b with the rows of x split over LibTorch's intra-op threads, forward
// and backward.
//
// On the CPU the system BLAS runs on the calling thread (core/blas_threads.h), so a torch::nn::Linear's product
// runs on one core while LibTorch's other threads wait. In a bow encoder's training step those products are most
// of the step's serial time: [~2,500 texts × 256] by [256 × 256], twice forward and four times backward. Here
// each thread multiplies a block of rows (x's forward, the gradient's for ∂x) or of W's rows (for ∂W, so no
// partial sums are added afterwards).
#include <torch/torch.h>

namespace xmc {

/// torch::nn::functional::linear(x, weight, bias) for a 2-D `x`; differentiable (first order) in all three. Split
/// over threads when x is a CPU float32 matrix with enough work, LibTorch has at least two threads and the call
/// is not already inside a parallel region; otherwise it is torch's own linear. `bias` may be undefined.
torch::Tensor row_parallel_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace xmc
