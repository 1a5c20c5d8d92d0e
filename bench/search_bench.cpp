// bench/search: exact top-100 of 10k queries over 200k labels (d = 256) against the bare matrix product
// it has to do (same chunks, products only), plus HnswIndex build/search time and recall@100 against the
// exact result. Data: a mixture of 2000 Gaussian clusters on the unit sphere (labels and queries drawn
// from the same clusters), as real embeddings are clustered.
// Usage: bench_search [queries] [labels] [dim] [k] [query_chunk] [key_chunk] [repeats] [hnsw 0/1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "bench/bare_products.h"
#include "bench/sphere_mixture.h"
#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/index/exact_search.h"
#include "engine/index/hnsw_index.h"

namespace {

using bench::around;
using bench::unit_rows;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t nq = argc > 1 ? std::atoll(argv[1]) : 10'000;
  const std::int64_t m = argc > 2 ? std::atoll(argv[2]) : 200'000;
  const std::int64_t d = argc > 3 ? std::atoll(argv[3]) : 256;
  const std::int64_t k = argc > 4 ? std::atoll(argv[4]) : 100;
  xmc::ExactSearchOptions options;
  if (argc > 5) options.query_chunk = std::atoll(argv[5]);
  if (argc > 6) options.key_chunk = std::atoll(argv[6]);
  options.query_chunk = xmc::exact_search_query_chunk(options);  // fixed here: the plain loops below read it
  const int repeats = argc > 7 ? std::atoi(argv[7]) : 2;
  const bool hnsw = argc > 8 ? std::atoi(argv[8]) != 0 : true;
  xmc::keep_freed_memory_for_reuse();  // as xmc does: score chunks are reused, not mapped afresh
  xmc::run_blas_on_calling_thread();
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;

  torch::manual_seed(1);
  const auto centres = unit_rows(torch::randn({2000, d}));
  const auto labels = around(centres, m);
  const auto queries = around(centres, nq);

  // Baseline: exactly the products exact_top_k computes, in the same chunks, and nothing else.
  auto products_only = [&] { return bare_products(queries, labels, options); };
  // Ablation: the same products with a plain torch::topk over every chunk, merged the same way.
  auto plain_topk = [&] {
    for (std::int64_t r0 = 0; r0 < nq; r0 += options.query_chunk) {
      torch::Tensor best_scores, best_ids;
      const auto q = queries.narrow(0, r0, std::min(options.query_chunk, nq - r0));
      for (std::int64_t k0 = 0; k0 < m; k0 += options.key_chunk) {
        const std::int64_t w = std::min(options.key_chunk, m - k0);
        auto [s, i] = xmc::chunk_inner_products(q, labels.narrow(0, k0, w)).topk(std::min(k, w), 1);
        i += k0;
        if (best_scores.defined()) {
          auto [ms, mi] = torch::cat({best_scores, s}, 1).topk(k, 1);
          best_ids = torch::cat({best_ids, i}, 1).gather(1, mi);
          best_scores = ms;
        } else {
          best_scores = s;
          best_ids = i;
        }
      }
    }
  };

  double t_products = 1e30, t_exact = 1e30, t_plain = 1e30;
  xmc::TopK exact;
  for (int rep = 0; rep < repeats; ++rep) {  // interleaved, best of each: robust to a busy machine
    auto t0 = Clock::now();
    products_only();
    t_products = std::min(t_products, seconds_since(t0));
    t0 = Clock::now();
    exact = xmc::exact_top_k(queries, labels, k, options);
    t_exact = std::min(t_exact, seconds_since(t0));
    t0 = Clock::now();
    plain_topk();
    t_plain = std::min(t_plain, seconds_since(t0));
  }
  const double flops = 2.0 * static_cast<double>(nq) * static_cast<double>(m) * static_cast<double>(d);
  std::printf(
      "{\"bench\":\"exact_top_k\",\"queries\":%lld,\"keys\":%lld,\"dim\":%lld,\"k\":%lld,\"threads\":%d,"
      "\"query_chunk\":%lld,\"key_chunk\":%lld,\"products_only_s\":%.3f,\"products_gflops\":%.1f,"
      "\"exact_top_k_s\":%.3f,\"ratio_to_products\":%.3f,\"plain_torch_topk_s\":%.3f,\"plain_topk_ratio\":%.3f,"
      "\"target_ratio\":1.3}\n",
      static_cast<long long>(nq), static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(k), threads,
      static_cast<long long>(options.query_chunk), static_cast<long long>(options.key_chunk), t_products,
      flops / t_products / 1e9, t_exact, t_exact / t_products, t_plain, t_plain / t_products);
  std::fflush(stdout);

  // Why the products go through oneDNN: the system BLAS behind torch::mm on one chunk.
  {
    const auto q = queries.narrow(0, 0, std::min<std::int64_t>(options.query_chunk, nq));
    const auto kk = labels.narrow(0, 0, std::min<std::int64_t>(options.key_chunk, m));
    const double chunk_flops = 2.0 * static_cast<double>(q.size(0) * kk.size(0) * d);
    auto t0 = Clock::now();
    auto a = torch::mm(q, kk.t());
    const double t_mm = seconds_since(t0);
    t0 = Clock::now();
    auto b = xmc::chunk_inner_products(q, kk);
    const double t_chunk = seconds_since(t0);
    std::printf("{\"bench\":\"chunk_product\",\"rows\":%lld,\"cols\":%lld,\"torch_mm_gflops\":%.1f,\"chunk_inner_products_gflops\":%.1f,\"max_abs_diff\":%.2e}\n",
                static_cast<long long>(q.size(0)), static_cast<long long>(kk.size(0)), chunk_flops / t_mm / 1e9,
                chunk_flops / t_chunk / 1e9, (a - b).abs().max().item<double>());
    std::fflush(stdout);
  }

  if (hnsw) {
    const xmc::HnswIndexOptions hopt{.M = 16, .ef_construction = 100, .ef_search = 128};
    xmc::HnswIndex index(d, hopt);
    auto t0 = Clock::now();
    index.add(m, labels.data_ptr<float>());
    const double t_build = seconds_since(t0);
    std::vector<float> scores(static_cast<std::size_t>(nq * k));
    std::vector<std::int64_t> ids(static_cast<std::size_t>(nq * k));
    t0 = Clock::now();
    index.search(nq, queries.data_ptr<float>(), k, scores.data(), ids.data());
    const double t_search = seconds_since(t0);
    const auto truth = exact.indices.contiguous();
    const auto* t = truth.data_ptr<std::int64_t>();
    std::int64_t hits = 0;
    for (std::int64_t i = 0; i < nq; ++i) {
      std::set<std::int64_t> want(t + i * k, t + (i + 1) * k);
      for (std::int64_t r = 0; r < k; ++r) hits += static_cast<std::int64_t>(want.count(ids[static_cast<std::size_t>(i * k + r)]));
    }
    std::printf(
        "{\"bench\":\"hnsw\",\"keys\":%lld,\"queries\":%lld,\"k\":%lld,\"M\":%lld,\"ef_construction\":%lld,\"ef_search\":%lld,"
        "\"threads\":%d,\"build_s\":%.2f,\"search_s\":%.3f,\"search_speedup_vs_exact\":%.2f,\"recall_at_k\":%.4f}\n",
        static_cast<long long>(m), static_cast<long long>(nq), static_cast<long long>(k), static_cast<long long>(hopt.M),
        static_cast<long long>(hopt.ef_construction), static_cast<long long>(hopt.ef_search), threads, t_build, t_search,
        t_exact / t_search, static_cast<double>(hits) / static_cast<double>(nq * k));
  }
  return 0;
}
