#pragma once
// Benchmark data shaped like trained embeddings: unit vectors scattered around random centres on the sphere
// (labels and queries drawn from the same centres), for the search and clustering benchmarks.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>

namespace bench {

inline torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

/// n unit rows, each a random one of `centres` plus Gaussian noise of norm about 1, normalised.
inline torch::Tensor around(const torch::Tensor& centres, std::int64_t n) {
  const auto d = centres.size(1);
  const auto which = torch::randint(0, centres.size(0), {n});
  return unit_rows(centres.index_select(0, which) + torch::randn({n, d}) / std::sqrt(static_cast<double>(d)));
}

}  // namespace bench
