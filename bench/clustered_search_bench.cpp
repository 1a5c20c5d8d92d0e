// bench/clustered_search: the clustered (IVF) top-k against exact top-k on the same queries and keys, for a
// range of probes: seconds for each (the clustering of the keys included in IVF's), their ratio, the share of
// the keys IVF scanned, and its recall of the exact top-10 and top-k. Data: a mixture of Gaussian clusters on
// the unit sphere (labels and queries from the same centres), as trained embeddings are clustered; `centres`
// sets how many (more centres, less structure).
// Usage: bench_clustered_search [queries] [labels] [dim] [k] [centres] [probes, comma-separated]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "bench/sphere_mixture.h"
#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/index/clustered_search.h"
#include "engine/index/exact_search.h"

namespace {

using bench::around;
using bench::unit_rows;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Mean over rows of |got[:depth] ∩ want[:depth]| / depth.
double recall(const torch::Tensor& got, const torch::Tensor& want, std::int64_t depth) {
  double sum = 0;
  for (std::int64_t r = 0; r < got.size(0); ++r) {
    const auto* g = got.data_ptr<std::int64_t>() + r * got.size(1);
    const auto* w = want.data_ptr<std::int64_t>() + r * want.size(1);
    std::int64_t hits = 0;
    for (std::int64_t j = 0; j < depth; ++j) hits += std::find(g, g + depth, w[j]) != g + depth ? 1 : 0;
    sum += static_cast<double>(hits) / static_cast<double>(depth);
  }
  return sum / static_cast<double>(got.size(0));
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t nq = argc > 1 ? std::atoll(argv[1]) : 20'000;
  const std::int64_t m = argc > 2 ? std::atoll(argv[2]) : 1'300'000;
  const std::int64_t d = argc > 3 ? std::atoll(argv[3]) : 128;
  const std::int64_t k = argc > 4 ? std::atoll(argv[4]) : 100;
  const std::int64_t centres_count = argc > 5 ? std::atoll(argv[5]) : 20'000;
  std::vector<std::int64_t> probes{16, 32, 64, 128};
  if (argc > 6) {
    probes.clear();
    std::stringstream list(argv[6]);
    for (std::string item; std::getline(list, item, ',');) probes.push_back(std::atoll(item.c_str()));
  }
  xmc::keep_freed_memory_for_reuse();
  xmc::run_blas_on_calling_thread();
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;

  torch::manual_seed(1);
  const auto centres = unit_rows(torch::randn({centres_count, d}));
  const auto labels = around(centres, m);
  const auto queries = around(centres, nq);

  auto t0 = Clock::now();
  const xmc::TopK exact = xmc::exact_top_k(queries, labels, k);
  const double t_exact = seconds_since(t0);
  for (const std::int64_t probe : probes) {
    xmc::ClusteredSearchOptions options;
    options.probe = probe;
    xmc::ClusteredSearchStats stats;
    t0 = Clock::now();
    const xmc::TopK approximate = xmc::clustered_top_k(queries, labels, k, options, &stats);
    const double t_ivf = seconds_since(t0);
    std::printf(
        "{\"bench\":\"clustered_top_k\",\"queries\":%lld,\"keys\":%lld,\"dim\":%lld,\"k\":%lld,\"centres\":%lld,\"threads\":%d,"
        "\"clusters\":%lld,\"probe\":%lld,\"scanned\":%.4f,\"exact_s\":%.2f,\"ivf_s\":%.2f,\"speedup\":%.2f,"
        "\"clustering_s\":%.2f,\"exact_queries_per_s\":%.0f,\"ivf_queries_per_s_after_clustering\":%.0f,\"recall_at_10\":%.4f,\"recall_at_k\":%.4f}\n",
        static_cast<long long>(nq), static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(k),
        static_cast<long long>(centres_count), threads, static_cast<long long>(stats.clusters), static_cast<long long>(stats.probed),
        stats.scanned_fraction, t_exact, t_ivf, t_exact / t_ivf, stats.clustering_seconds, static_cast<double>(nq) / t_exact,
        static_cast<double>(nq) / (t_ivf - stats.clustering_seconds), recall(approximate.indices, exact.indices, std::min<std::int64_t>(10, k)),
        recall(approximate.indices, exact.indices, k));
    std::fflush(stdout);
  }
  return 0;
}
