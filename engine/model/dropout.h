#pragma once
// Engine-internal (includes torch). Inverted dropout whose CPU mask is drawn in parallel.
//
// LibTorch's CPU dropout fills its mask with bernoulli_, which on a build without MKL (Debian's) draws one
// number at a time from the generator, about 5 ns an element: 0.3 ms for a 512 × 128 head activation, tens of
// milliseconds for a BERT layer's [512 × 32 × 768]. Here each element's draw is a hash of its index and a seed
// taken from LibTorch's default CPU generator (one draw per call), so the mask is computed by all threads, is
// the same whatever their number, and follows the generator: manual_seed, checkpointed generator states and
// gradient caching's replays of a forward give the same masks.
#include <torch/torch.h>

#include <cstdint>

namespace xmc {

/// In training and with p > 0: each element zeroed with probability p, the others scaled by 1/(1-p); `x`
/// unchanged otherwise. CPU float and double tensors use the parallel mask, anything else (CUDA, half types)
/// LibTorch's own dropout. Throws std::invalid_argument unless 0 ≤ p ≤ 1.
torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

/// The mask `dropout` multiplies by on the CPU: `count` values in {0, 1/(1-p)}, element i kept iff the 32-bit
/// hash of (seed, i) is at least p·2^32. Exposed for tests (statistics of the draw, independence of threads).
torch::Tensor dropout_mask(std::uint64_t seed, std::int64_t count, double p, torch::ScalarType dtype);

/// A torch::nn::Dropout that draws its mask with `dropout` (no parameters or buffers: state dicts unchanged).
class DropoutImpl : public torch::nn::Module {
 public:
  explicit DropoutImpl(double p);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  double p_;
};
TORCH_MODULE(Dropout);

}  // namespace xmc
