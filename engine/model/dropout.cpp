#include "engine/model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <mutex>
#include <stdexcept>
#include <string>

#include "engine/core/splitmix64.h"

namespace xmc {
namespace {

std::uint64_t draw_seed() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

template <typename Scalar>
void fill_mask(Scalar* out, std::uint64_t seed, std::int64_t count, double p) {
  // Element i keeps iff the high 32 bits of splitmix64's (i+1)-th output from the state splitmix64_mix(seed)
  // are ≥ p·2^32: a stream per call (the seed is mixed first, so nearby seeds do not give shifted copies of
  // one stream).
  const std::uint64_t start = splitmix64_mix(seed);
  const std::uint64_t threshold = static_cast<std::uint64_t>(p * 4294967296.0);  // p·2^32, at most 2^32
  const Scalar scale = static_cast<Scalar>(1.0 / (1.0 - p));
  at::parallel_for(0, count, 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::uint64_t draw = splitmix64_mix(start + static_cast<std::uint64_t>(i + 1) * kSplitmix64Increment) >> 32;
      out[i] = draw >= threshold ? scale : Scalar(0);
    }
  });
}

void check_probability(double p) {
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("dropout probability must be in [0, 1], got " + std::to_string(p));
}

}  // namespace

torch::Tensor dropout_mask(std::uint64_t seed, std::int64_t count, double p, torch::ScalarType dtype) {
  check_probability(p);
  if (p >= 1.0) return torch::zeros({count}, torch::TensorOptions().dtype(dtype));
  torch::Tensor mask = torch::empty({count}, torch::TensorOptions().dtype(dtype));
  if (dtype == torch::kFloat)
    fill_mask(mask.data_ptr<float>(), seed, count, p);
  else if (dtype == torch::kDouble)
    fill_mask(mask.data_ptr<double>(), seed, count, p);
  else
    throw std::invalid_argument("dropout_mask: float or double only");
  return mask;
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  check_probability(p);
  if (!training || p == 0.0) return x;
  const bool parallel_mask = x.device().is_cpu() && (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
  if (!parallel_mask) return torch::dropout(x, p, /*train=*/true);
  // The same product as LibTorch's CPU dropout (input * noise, noise saved for backward): only the draw differs.
  return x * dropout_mask(draw_seed(), x.numel(), p, x.scalar_type()).view(x.sizes());
}

DropoutImpl::DropoutImpl(double p) : p_(p) { check_probability(p); }

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) { return xmc::dropout(x, p_, is_training()); }

}  // namespace xmc
