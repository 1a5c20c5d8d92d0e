// bench/evaluation: a whole test-set evaluation as training runs it — exact top-100 of 16k queries over
// 30k labels (d = 128), filter pairs removed, P/nDCG/PSP/PSnDCG/R at 1, 3, 5, 10 and decile-wise P@5 —
// against the bare matrix products it has to do (the same query × label chunks, products only).
// Data: a mixture of Gaussian clusters on the unit sphere; every query's 1–9 true labels come from its own
// cluster and one filter pair per query, so the search, the filter and the metrics all do real work.
// Usage: bench_evaluation [queries] [labels] [dim] [repeats]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "bench/bare_products.h"
#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/filter_pairs.h"
#include "engine/eval/decile_bins.h"
#include "engine/index/exact_search.h"
#include "engine/train/evaluation_pass.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t nq = argc > 1 ? std::atoll(argv[1]) : 16'000;
  const std::int64_t m = argc > 2 ? std::atoll(argv[2]) : 30'000;
  const std::int64_t d = argc > 3 ? std::atoll(argv[3]) : 128;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 3;
  xmc::keep_freed_memory_for_reuse();
  xmc::run_blas_on_calling_thread();
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;

  // Labels and queries around shared centres; label l belongs to cluster l % clusters.
  torch::manual_seed(1);
  const std::int64_t clusters = std::max<std::int64_t>(1, m / 16);
  const auto centres = unit_rows(torch::randn({clusters, d}));
  const auto label_cluster = torch::arange(m) % clusters;
  const auto labels = unit_rows(centres.index_select(0, label_cluster) + torch::randn({m, d}) / std::sqrt(static_cast<double>(d)));
  const auto query_cluster = torch::randint(0, clusters, {nq});
  const auto queries = unit_rows(centres.index_select(0, query_cluster) + torch::randn({nq, d}) / std::sqrt(static_cast<double>(d)));

  std::mt19937_64 rng(7);
  std::vector<std::vector<std::int32_t>> truth_rows(static_cast<std::size_t>(nq));
  std::vector<xmc::FilterPair> filter;
  const auto* cluster_of = query_cluster.data_ptr<std::int64_t>();
  const std::int64_t per_cluster = (m + clusters - 1) / clusters;
  for (std::int64_t r = 0; r < nq; ++r) {
    const int count = 1 + static_cast<int>(rng() % 9);
    for (int j = 0; j < count; ++j) {
      const std::int64_t label = cluster_of[r] + clusters * static_cast<std::int64_t>(rng() % per_cluster);
      if (label < m) truth_rows[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>(label));
    }
    filter.push_back({r, static_cast<std::int32_t>(cluster_of[r] + clusters * static_cast<std::int64_t>(rng() % per_cluster)) % static_cast<std::int32_t>(m)});
  }
  const xmc::CsrMatrix truth = xmc::csr_from_rows(truth_rows, m);
  const xmc::FilterPairs filter_pairs(std::move(filter));
  std::vector<std::int64_t> frequencies = truth.column_counts();
  xmc::EvaluationSetup setup;
  setup.truth = &truth;
  setup.filter = &filter_pairs;
  setup.inv_propensities.assign(static_cast<std::size_t>(m), 1.5);
  setup.bins = xmc::decile_bins(frequencies);
  setup.ks = {1, 3, 5, 10};
  setup.top = 100;

  // Baseline: exactly the products exact_top_k computes, in the same chunks, and nothing else.
  const xmc::ExactSearchOptions chunks;
  auto products_only = [&] { return bare_products(queries, labels, chunks); };

  double t_products = 1e30, t_eval = 1e30, t_search = 1e30;
  double p1 = 0;
  for (int rep = 0; rep < repeats; ++rep) {  // interleaved, best of each: robust to a busy machine
    auto t0 = Clock::now();
    products_only();
    t_products = std::min(t_products, seconds_since(t0));
    t0 = Clock::now();
    xmc::exact_top_k(queries, labels, setup.top + 1);
    t_search = std::min(t_search, seconds_since(t0));
    t0 = Clock::now();
    const xmc::EvalResult result = xmc::evaluate_ranking(queries, labels, setup);
    t_eval = std::min(t_eval, seconds_since(t0));
    for (const auto& [name, value] : result.metrics)
      if (name == "P@1") p1 = value;
  }
  std::printf(
      "{\"bench\":\"evaluation\",\"queries\":%lld,\"labels\":%lld,\"dim\":%lld,\"threads\":%d,\"products_only_s\":%.3f,"
      "\"exact_top_k_s\":%.3f,\"search_ratio_to_products\":%.3f,\"evaluation_s\":%.3f,\"evaluation_ratio_to_products\":%.3f,"
      "\"target_ratio\":1.5,\"P@1\":%.4f}\n",
      static_cast<long long>(nq), static_cast<long long>(m), static_cast<long long>(d), threads, t_products, t_search,
      t_search / t_products, t_eval, t_eval / t_products, p1);
  return 0;
}
