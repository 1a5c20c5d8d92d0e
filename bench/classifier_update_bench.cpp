// bench/classifier_update: one optimiser step of a classifier table Ψ [labels × dim] whose step touched the
// rows of one label pool (UniDEC's: a few thousand labels), dense AdamW (every row's moments decay, every row
// moves) against lazy rows (unidec.classifier_optimizer=lazy_adamw: the pooled rows only), at growing label
// counts. Prints one JSON line per label count: milliseconds per step, median of the repeats, and the ratio.
// Usage: bench_classifier_update [dim] [pool] [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "engine/core/blas_threads.h"
#include "engine/optim/fused_adamw.h"

namespace {

using Clock = std::chrono::steady_clock;

/// Median milliseconds of `repeats` steps, each with a fresh row-sparse gradient over `pool` random rows.
double step_ms(std::int64_t labels, std::int64_t dim, std::int64_t pool, int repeats, bool lazy) {
  torch::Tensor table = (torch::randn({labels, dim}) * 0.02).requires_grad_();
  xmc::FusedAdamW optimizer({table}, torch::optim::AdamWOptions(0.01));
  if (lazy) optimizer.update_rows_lazily(table);
  std::vector<double> times;
  for (int r = 0; r < repeats + 1; ++r) {
    const torch::Tensor rows = std::get<0>(torch::randperm(labels).narrow(0, 0, pool).sort());
    table.mutable_grad() = torch::sparse_coo_tensor(rows.unsqueeze(0), torch::randn({pool, dim}), {labels, dim})._coalesced_(true);
    const auto t0 = Clock::now();
    optimizer.step();
    if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());  // the first makes the moments
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t dim = argc > 1 ? std::atoll(argv[1]) : 256;
  const std::int64_t pool = argc > 2 ? std::atoll(argv[2]) : 3000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 9;
  xmc::run_blas_on_calling_thread();
  at::set_num_threads(static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  torch::manual_seed(0);
  for (const std::int64_t labels : {10'000L, 100'000L, 1'000'000L}) {
    const double dense = step_ms(labels, dim, pool, repeats, false);
    const double lazy = step_ms(labels, dim, pool, repeats, true);
    std::printf("{\"labels\": %lld, \"dim\": %lld, \"pool\": %lld, \"threads\": %d, \"adamw_ms\": %.3f, \"lazy_adamw_ms\": %.3f, \"ratio\": %.4f}\n",
                static_cast<long long>(labels), static_cast<long long>(dim), static_cast<long long>(pool), at::get_num_threads(), dense, lazy,
                lazy / dense);
  }
  return 0;
}
