#include "engine/index/spherical_kmeans.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/core/portable_random.h"
#include "engine/index/exact_search.h"

namespace xmc {
namespace {

torch::Tensor unit(const torch::Tensor& rows) {
  return torch::nn::functional::normalize(rows, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

/// Each row's most similar centroid, in chunks of rows so that the scores take the memory budget's share (64 MB at
/// 512 MB).
torch::Tensor nearest(const torch::Tensor& rows, const torch::Tensor& centroids) {
  const std::int64_t n = rows.size(0), k = centroids.size(0);
  const std::int64_t chunk = std::max<std::int64_t>(1, memory_budget_part(memory_share::kKmeansScores) / static_cast<std::int64_t>(sizeof(float)) / k);
  torch::Tensor out = torch::empty({n}, torch::kInt64);
  for (std::int64_t first = 0; first < n; first += chunk) {
    const std::int64_t count = std::min(chunk, n - first);
    out.narrow(0, first, count).copy_(chunk_inner_products(unit(rows.narrow(0, first, count).to(torch::kFloat)), centroids).argmax(1));
  }
  return out;
}

/// k-means++ seeding (Arthur and Vassilvitskii) on the first rows of the (shuffled) sample: each next centroid
/// is a row drawn with probability ∝ its squared distance 2 - 2cos to the nearest centroid so far, so groups far
/// apart each get one. At most max(2k, 4096) rows take part: k passes over them cost k × rows × d, and the rows stay
/// in the cache between passes (4,546 centroids of 256: 9.3 MB of rows, 1 s; with 8k rows, 37 MB, 13 s, for a
/// recall@10 at an equal probe 0.004 higher after the iterations: bench/RESULTS.md).
torch::Tensor seeded_centroids(const torch::Tensor& sample, std::int64_t k, std::mt19937_64& rng) {
  const torch::Tensor rows = sample.narrow(0, 0, std::min(sample.size(0), std::max<std::int64_t>(2 * k, 4096)));
  const std::int64_t n = rows.size(0);
  torch::Tensor centroids = torch::empty({k, rows.size(1)});
  centroids[0].copy_(rows[0]);
  torch::Tensor distance = (2.0 - 2.0 * torch::mv(rows, rows[0])).clamp_min_(0.0);
  for (std::int64_t j = 1; j < k; ++j) {
    const torch::Tensor cumulative = distance.to(torch::kDouble).cumsum(0);
    const double total = cumulative[n - 1].item<double>();
    std::int64_t pick = j % n;  // every row already a centroid (duplicates): any row will do
    if (total > 0) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * total;
      pick = std::min<std::int64_t>(n - 1, torch::searchsorted(cumulative, torch::tensor({u}, torch::kDouble), false, true).item<std::int64_t>());
    }
    centroids[j].copy_(rows[pick]);
    distance = torch::minimum(distance, (2.0 - 2.0 * torch::mv(rows, rows[pick])).clamp_min_(0.0));
  }
  return centroids;
}

}  // namespace

SphericalKMeans spherical_kmeans(const torch::Tensor& rows, std::int64_t k, const SphericalKMeansOptions& options) {
  if (rows.dim() != 2) throw ConfigError("spherical_kmeans: rows must be 2-D, got " + std::to_string(rows.dim()) + " dimensions");
  if (k < 1) throw ConfigError("spherical_kmeans: k must be at least 1, got " + std::to_string(k));
  if (options.iterations < 0 || options.sample_per_centroid < 1)
    throw ConfigError("spherical_kmeans: iterations must be >= 0 and sample_per_centroid >= 1");
  torch::NoGradGuard no_grad;
  // Float32 or bfloat16 rows on the CPU are read where they lie (a column block of a larger matrix, or bfloat16 keys
  // kept for their half size, are not copied whole), a chunk at a time in float32.
  const bool readable = rows.is_cpu() && (rows.scalar_type() == torch::kFloat || rows.scalar_type() == torch::kBFloat16);
  const torch::Tensor x = readable ? rows : rows.to(torch::kCPU, torch::kFloat).contiguous();
  const std::int64_t n = x.size(0), d = x.size(1);
  SphericalKMeans out;
  if (n == 0) {
    out.centroids = torch::zeros({0, d});
    out.assignment = torch::empty({0}, torch::kInt64);
    return out;
  }
  k = std::min(k, n);
  std::mt19937_64 rng(options.seed ^ 0x6b6d65616e73ULL);  // "kmeans"
  // The training sample: the first rows of a portable shuffle (all rows when they are few).
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  shuffle_rows(order, rng);
  const std::int64_t sample_size = std::min(n, k * options.sample_per_centroid);
  const torch::Tensor sample_ids = torch::tensor(std::vector<std::int64_t>(order.begin(), order.begin() + sample_size), torch::kInt64);
  const torch::Tensor sample = unit(x.index_select(0, sample_ids).to(torch::kFloat));
  torch::Tensor centroids = seeded_centroids(sample, k, rng);
  for (std::int64_t it = 0; it < options.iterations; ++it) {
    const torch::Tensor assigned = nearest(sample, centroids);
    torch::Tensor sums = torch::zeros({k, d}).index_add_(0, assigned, sample);
    const torch::Tensor counts = torch::bincount(assigned, {}, k);
    const auto* count = counts.data_ptr<std::int64_t>();
    for (std::int64_t c = 0; c < k; ++c)
      if (count[c] == 0) sums[c].copy_(sample[uniform_index(rng, sample_size)]);  // an empty cluster starts again elsewhere
    centroids = unit(sums);
  }
  out.assignment = nearest(x, centroids);
  // Final centroids: the normalised means of all the rows each cluster got.
  torch::Tensor sums = torch::zeros({k, d});
  const std::int64_t chunk = std::int64_t{1} << 16;
  for (std::int64_t first = 0; first < n; first += chunk) {
    const std::int64_t count = std::min(chunk, n - first);
    sums.index_add_(0, out.assignment.narrow(0, first, count), unit(x.narrow(0, first, count).to(torch::kFloat)));
  }
  out.centroids = unit(sums).contiguous();
  return out;
}

}  // namespace xmc
