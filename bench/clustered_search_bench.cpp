// bench/clustered_search: the clustered (IVF) top-k against exact top-k on the same queries and keys, for a
// range of probes, each with float32 and with bfloat16 products: seconds for each (the keys' clustering apart), the
// ratio to exact, the share of the keys IVF scanned, and its recall of the exact top-10 and top-k. Synthetic data: a mixture of Gaussian clusters on
// the unit sphere (labels and queries from the same centres), as trained embeddings are clustered; `centres`
// sets how many (more centres, less structure).
// Usage: bench_clustered_search [queries] [labels] [dim] [k] [centres] [probes, comma-separated]
//        bench_clustered_search QUERIES.npy KEYS.npy [k] [probes] [FROM:TO] [keys per cluster]
// The second form searches a run's own vectors (`xmc embed --mode M` of test queries, and with `--side label`);
// FROM:TO keeps those columns only (the de block of a UniDEC run's concat vectors ranks as its de mode does; ":"
// keeps all); keys per cluster sets the clusters' size (0, the default: about √keys).
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
#include "engine/core/cpu_features.h"
#include "engine/core/error.h"
#include "engine/data/npy_file.h"
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

/// A float32 [rows × cols] .npy file, read whole.
torch::Tensor read_npy_matrix(const std::string& path) {
  const xmc::NpyHeader header = xmc::read_npy_header(path);
  if (header.descr != "<f4" || header.shape.size() != 2) throw xmc::InputError(path, "expected a 2-D float32 array");
  torch::Tensor out = torch::empty({header.shape[0], header.shape[1]});
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr || std::fseek(file, static_cast<long>(header.data_offset), SEEK_SET) != 0 ||
      std::fread(out.data_ptr<float>(), sizeof(float), static_cast<std::size_t>(out.numel()), file) != static_cast<std::size_t>(out.numel()))
    throw xmc::InputError(path, "cannot read its values");
  std::fclose(file);
  return out;
}

bool ends_with_npy(const char* s) {
  const std::string name(s);
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Either the synthetic layout, or QUERIES.npy KEYS.npy [k] [probes] [FROM:TO] (the columns searched, e.g. one
  // block of a UniDEC run's joint label matrix).
  const bool from_files = argc > 2 && ends_with_npy(argv[1]) && ends_with_npy(argv[2]);
  const int k_arg = from_files ? 3 : 4, probes_arg = from_files ? 4 : 6;
  const std::int64_t nq = from_files ? 0 : argc > 1 ? std::atoll(argv[1]) : 20'000;
  const std::int64_t m = from_files ? 0 : argc > 2 ? std::atoll(argv[2]) : 1'300'000;
  const std::int64_t d = !from_files && argc > 3 ? std::atoll(argv[3]) : 128;
  const std::int64_t k = argc > k_arg ? std::atoll(argv[k_arg]) : 100;
  const std::int64_t centres_count = from_files ? 0 : argc > 5 ? std::atoll(argv[5]) : 20'000;  // 0: a run's own vectors
  std::vector<std::int64_t> probes{16, 32, 64, 128};
  if (argc > probes_arg) {
    probes.clear();
    std::stringstream list(argv[probes_arg]);
    for (std::string item; std::getline(list, item, ',');) probes.push_back(std::atoll(item.c_str()));
  }
  xmc::keep_freed_memory_for_reuse();
  xmc::run_blas_on_calling_thread();
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;

  torch::Tensor labels, queries;
  if (from_files) {
    queries = read_npy_matrix(argv[1]);
    labels = read_npy_matrix(argv[2]);
    if (queries.size(1) != labels.size(1))
      throw xmc::InputError(argv[2], std::to_string(labels.size(1)) + " columns, the queries " + std::to_string(queries.size(1)));
    if (argc > 5 && std::string(argv[5]) != ":") {
      const std::string range = argv[5];
      const auto colon = range.find(':');
      const std::int64_t from = std::atoll(range.substr(0, colon).c_str());
      const std::int64_t to = colon == std::string::npos ? labels.size(1) : std::atoll(range.substr(colon + 1).c_str());
      if (from < 0 || to > labels.size(1) || from >= to) throw xmc::ConfigError("columns " + range + " outside 0:" + std::to_string(labels.size(1)));
      labels = labels.narrow(1, from, to - from).contiguous();
      queries = queries.narrow(1, from, to - from).contiguous();
    }
  } else {
    torch::manual_seed(1);
    const auto centres = unit_rows(torch::randn({centres_count, d}));
    labels = around(centres, m);
    queries = around(centres, nq);
  }

  auto t0 = Clock::now();
  const xmc::TopK exact = xmc::exact_top_k(queries, labels, k);
  const double t_exact = seconds_since(t0);
  // The keys clustered once; each probe searched with float32 products, then with bfloat16 ones (their candidates
  // re-scored in float32), the two side by side.
  t0 = Clock::now();
  const std::int64_t cluster_size = from_files && argc > 6 ? std::atoll(argv[6]) : 0;
  const xmc::KeyClusters clusters(labels, cluster_size);
  const double t_clustering = seconds_since(t0);
  for (const std::int64_t probe : probes) {
    for (const bool bfloat16 : {false, true}) {
      // Emulated bfloat16 products (a CPU without AVX512-BF16 or AMX) are slower than float32 and never chosen.
      if (bfloat16 && !xmc::cpu_has_native_bfloat16_products()) continue;
      xmc::ClusteredSearchOptions options;
      options.probe = probe;
      options.bfloat16_products = bfloat16;
      xmc::ClusteredSearchStats stats;
      t0 = Clock::now();
      const xmc::TopK approximate = clusters.search(queries, k, options, &stats);
      const double t_search = seconds_since(t0);
      std::printf(
          "{\"bench\":\"clustered_top_k\",\"products\":\"%s\",\"queries\":%lld,\"keys\":%lld,\"dim\":%lld,\"k\":%lld,\"centres\":%lld,"
          "\"threads\":%d,\"clusters\":%lld,\"probe\":%lld,\"scanned\":%.4f,\"exact_s\":%.2f,\"clustering_s\":%.2f,\"search_s\":%.2f,"
          "\"speedup_after_clustering\":%.2f,\"exact_queries_per_s\":%.0f,\"ivf_queries_per_s\":%.0f,\"recall_at_10\":%.4f,\"recall_at_k\":%.4f}\n",
          bfloat16 ? "bfloat16" : "float32", static_cast<long long>(queries.size(0)), static_cast<long long>(labels.size(0)),
          static_cast<long long>(labels.size(1)), static_cast<long long>(k), static_cast<long long>(centres_count), threads,
          static_cast<long long>(clusters.clusters()), static_cast<long long>(stats.probed), stats.scanned_fraction, t_exact, t_clustering, t_search,
          t_exact / t_search, static_cast<double>(queries.size(0)) / t_exact, static_cast<double>(queries.size(0)) / t_search,
          recall(approximate.indices, exact.indices, std::min<std::int64_t>(10, k)), recall(approximate.indices, exact.indices, k));
      std::fflush(stdout);
    }
  }
  return 0;
}
