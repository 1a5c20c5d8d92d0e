// bench/clustering: NGAME's balanced recursive 2-means of 200k × 256 unit embeddings into clusters of 16,
// against FAISS k-means (libfaiss 1.7.3) measured in the same run.
//
// Which FAISS baseline is fair: flat k-means with k = n / 16 = 12.5k centroids does a 200k × 12.5k
// assignment per iteration (1.3 TFLOP) — orders of magnitude more work than a 2-means tree, so it is not
// run; its cost is estimated from one timed assignment of a sample. The like-for-like baseline is the
// same tree built with FAISS: faiss::Clustering with k = 2 (spherical, same iterations per split) applied
// recursively until nodes have ≤ 16 rows. FAISS does not balance, so its leaves are uneven; it is run
// with all points per split (as ours) and with FAISS's default sampling (≤ 256 points per centroid).
// Quality: mean cosine similarity of each row to its cluster's normalised mean.
// Data: a mixture of 4096 Gaussian clusters on the unit sphere.
// Usage: bench_clustering [n] [dim] [cluster_size] [iterations]
#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "engine/sampler/balanced_clustering.h"

namespace {

using Clock = std::chrono::steady_clock;
using Clusters = std::vector<std::vector<std::int64_t>>;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

// The same tree with FAISS: k = 2 spherical k-means per node, recursively, until nodes have ≤ C rows.
// A split that leaves one side empty falls back to halving the node (counted).
Clusters faiss_recursive_2means(const float* x, std::int64_t n, std::int64_t d, std::int64_t c, int iterations,
                                int max_points_per_centroid, std::int64_t& fallbacks) {
  Clusters leaves;
  std::deque<std::vector<std::int64_t>> todo;
  todo.emplace_back(static_cast<std::size_t>(n));
  std::iota(todo.front().begin(), todo.front().end(), 0);
  std::vector<float> rows;
  std::vector<float> scores;
  std::vector<faiss::Index::idx_t> assign;
  while (!todo.empty()) {
    auto node = std::move(todo.front());
    todo.pop_front();
    const auto size = static_cast<std::int64_t>(node.size());
    if (size <= c) {
      leaves.push_back(std::move(node));
      continue;
    }
    rows.resize(static_cast<std::size_t>(size * d));
    for (std::int64_t i = 0; i < size; ++i)
      std::copy_n(x + node[static_cast<std::size_t>(i)] * d, d, rows.data() + i * d);
    faiss::ClusteringParameters cp;
    cp.niter = iterations;
    cp.spherical = true;
    cp.verbose = false;
    cp.min_points_per_centroid = 1;
    cp.max_points_per_centroid = max_points_per_centroid;
    cp.seed = 1234;
    faiss::Clustering clustering(static_cast<int>(d), 2, cp);
    faiss::IndexFlatIP index(d);
    clustering.train(size, rows.data(), index);
    scores.resize(static_cast<std::size_t>(size));
    assign.resize(static_cast<std::size_t>(size));
    index.search(size, rows.data(), 1, scores.data(), assign.data());
    std::vector<std::int64_t> side[2];
    for (std::int64_t i = 0; i < size; ++i) side[assign[static_cast<std::size_t>(i)] == 1].push_back(node[static_cast<std::size_t>(i)]);
    if (side[0].empty() || side[1].empty()) {
      ++fallbacks;
      side[0].assign(node.begin(), node.begin() + size / 2);
      side[1].assign(node.begin() + size / 2, node.end());
    }
    todo.push_back(std::move(side[0]));
    todo.push_back(std::move(side[1]));
  }
  return leaves;
}

struct Summary {
  std::size_t clusters = 0, smallest = 0, largest = 0;
  double rows_in_small = 0;  // fraction of rows in clusters of fewer than ⌈C/2⌉ rows
  double quality = 0;        // mean cosine of a row to its cluster's normalised mean
};

Summary summarize(const Clusters& clusters, const torch::Tensor& x, std::int64_t c) {
  Summary s;
  s.clusters = clusters.size();
  s.smallest = x.size(0);
  std::vector<std::int64_t> owner(static_cast<std::size_t>(x.size(0)));
  std::int64_t small_rows = 0;
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    s.smallest = std::min(s.smallest, clusters[i].size());
    s.largest = std::max(s.largest, clusters[i].size());
    if (static_cast<std::int64_t>(clusters[i].size()) < (c + 1) / 2) small_rows += static_cast<std::int64_t>(clusters[i].size());
    for (auto row : clusters[i]) owner[static_cast<std::size_t>(row)] = static_cast<std::int64_t>(i);
  }
  s.rows_in_small = static_cast<double>(small_rows) / static_cast<double>(x.size(0));
  const auto own = torch::tensor(owner, torch::kInt64);
  const auto means = unit_rows(torch::zeros({static_cast<std::int64_t>(clusters.size()), x.size(1)}).index_add_(0, own, x));
  s.quality = (x * means.index_select(0, own)).sum(1).mean().item<double>();
  return s;
}

std::string json(const Summary& s) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "\"clusters\":%zu,\"min_size\":%zu,\"max_size\":%zu,\"rows_in_clusters_below_half_C\":%.4f,\"mean_cos_to_centroid\":%.4f",
                s.clusters, s.smallest, s.largest, s.rows_in_small, s.quality);
  return buffer;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 200'000;
  const std::int64_t d = argc > 2 ? std::atoll(argv[2]) : 256;
  const std::int64_t c = argc > 3 ? std::atoll(argv[3]) : 16;
  const int iterations = argc > 4 ? std::atoi(argv[4]) : 10;
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);  // also OpenMP's count, which FAISS uses
  torch::NoGradGuard no_grad;

  torch::manual_seed(1);
  const auto centres = unit_rows(torch::randn({4096, d}));
  const auto x = unit_rows(centres.index_select(0, torch::randint(0, 4096, {n})) +
                           torch::randn({n, d}) / std::sqrt(static_cast<double>(d))).contiguous();

  auto t0 = Clock::now();
  const auto ours = xmc::balanced_clusters(x, c, {.seed = 1, .iterations = iterations});
  const double t_ours = seconds_since(t0);
  const auto s_ours = summarize(ours, x, c);

  std::int64_t fallbacks_all = 0, fallbacks_sampled = 0;
  t0 = Clock::now();
  const auto faiss_all = faiss_recursive_2means(x.data_ptr<float>(), n, d, c, iterations, 1 << 30, fallbacks_all);
  const double t_faiss_all = seconds_since(t0);
  t0 = Clock::now();
  const auto faiss_sampled = faiss_recursive_2means(x.data_ptr<float>(), n, d, c, iterations, 256, fallbacks_sampled);
  const double t_faiss_sampled = seconds_since(t0);

  // Flat k-means with n / C centroids: one timed assignment of a sample, scaled to n rows × iterations.
  const std::int64_t k_flat = n / c;
  const std::int64_t sample = std::min<std::int64_t>(n, 1000);
  faiss::IndexFlatIP flat(d);
  flat.add(k_flat, x.data_ptr<float>());
  std::vector<float> scores(static_cast<std::size_t>(sample));
  std::vector<faiss::Index::idx_t> assign(static_cast<std::size_t>(sample));
  t0 = Clock::now();
  flat.search(sample, x.data_ptr<float>() + (n - sample) * d, 1, scores.data(), assign.data());
  const double t_flat_estimate = seconds_since(t0) * static_cast<double>(n) / static_cast<double>(sample) * iterations;

  std::printf("{\"bench\":\"balanced_clustering\",\"n\":%lld,\"dim\":%lld,\"cluster_size\":%lld,\"iterations_per_split\":%d,\"threads\":%d,\"seconds\":%.2f,%s}\n",
              static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(c), iterations, threads, t_ours, json(s_ours).c_str());
  std::printf("{\"bench\":\"faiss_recursive_2means_all_points\",\"what\":\"same tree via faiss::Clustering k=2 spherical, all points per split, unbalanced\",\"seconds\":%.2f,\"ours_time_ratio\":%.3f,\"empty_split_fallbacks\":%lld,%s}\n",
              t_faiss_all, t_ours / t_faiss_all, static_cast<long long>(fallbacks_all), json(summarize(faiss_all, x, c)).c_str());
  std::printf("{\"bench\":\"faiss_recursive_2means_sampled\",\"what\":\"as above with FAISS default max_points_per_centroid=256\",\"seconds\":%.2f,\"ours_time_ratio\":%.3f,\"empty_split_fallbacks\":%lld,%s}\n",
              t_faiss_sampled, t_ours / t_faiss_sampled, static_cast<long long>(fallbacks_sampled), json(summarize(faiss_sampled, x, c)).c_str());
  std::printf("{\"bench\":\"faiss_flat_kmeans_estimate\",\"what\":\"k=n/C centroids, assignment of %lld rows timed and scaled to n rows x iterations (not run)\",\"centroids\":%lld,\"estimated_seconds\":%.1f,\"ours_time_ratio\":%.5f}\n",
              static_cast<long long>(sample), static_cast<long long>(k_flat), t_flat_estimate, t_ours / t_flat_estimate);
  return 0;
}
