// bench/dropout: one training-mode dropout, forward and backward, LibTorch's (torch::dropout: its CPU mask is
// bernoulli_) against the engine's (engine/model/dropout: a hashed mask filled by all threads), on the shapes
// the models drop: a head's [batch × d] activation and a BERT layer's [batch × max_len × hidden]. Prints one
// JSON line per shape: milliseconds (median of the repeats) and the ratio.
// Usage: bench_dropout [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "engine/core/blas_threads.h"
#include "engine/model/dropout.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename Dropout>
double median_ms(const std::vector<std::int64_t>& shape, int repeats, Dropout drop) {
  const torch::Tensor x = torch::randn(shape).requires_grad_();
  std::vector<double> times;
  for (int r = 0; r < repeats + 1; ++r) {
    const auto t0 = Clock::now();
    drop(x).sum().backward();
    if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    x.mutable_grad() = torch::Tensor();
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 21;
  xmc::run_blas_on_calling_thread();
  at::set_num_threads(static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  const double p = 0.1;
  const std::vector<std::vector<std::int64_t>> shapes = {{256, 256}, {512, 128}, {512, 256}, {512, 32, 768}};
  for (const auto& shape : shapes) {
    const double libtorch = median_ms(shape, repeats, [&](const torch::Tensor& x) { return torch::dropout(x, p, true); });
    const double engine = median_ms(shape, repeats, [&](const torch::Tensor& x) { return xmc::dropout(x, p, true); });
    std::string dims;
    for (const auto d : shape) {
      if (!dims.empty()) dims += 'x';
      dims += std::to_string(d);
    }
    std::printf("{\"shape\": \"%s\", \"threads\": %d, \"libtorch_ms\": %.4f, \"engine_ms\": %.4f, \"engine_over_libtorch\": %.3f}\n",
                dims.c_str(), at::get_num_threads(), libtorch, engine, engine / libtorch);
  }
  return 0;
}
