// Balanced recursive 2-means: cluster sizes as the header states them, every row exactly once,
// determinism, and recovery of well-separated blobs.
#include "engine/sampler/balanced_clustering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "engine/core/error.h"

namespace xmc {
namespace {

using Clusters = std::vector<std::vector<std::int64_t>>;

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

torch::Tensor random_embeddings(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  torch::manual_seed(seed);
  return unit_rows(torch::randn({n, d}));
}

void expect_partition(const Clusters& clusters, std::int64_t n) {
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  for (const auto& cluster : clusters) {
    EXPECT_TRUE(std::is_sorted(cluster.begin(), cluster.end()));
    for (auto row : cluster) {
      ASSERT_GE(row, 0);
      ASSERT_LT(row, n);
      ++seen[static_cast<std::size_t>(row)];
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int count) { return count == 1; })) << "every row exactly once";
}

TEST(BalancedClustering, PowerOfTwoMultipleGivesExactSizes) {
  const auto clusters = balanced_clusters(random_embeddings(1024, 16, 1), 16);
  ASSERT_EQ(clusters.size(), 64u);
  for (const auto& cluster : clusters) EXPECT_EQ(cluster.size(), 16u);
  expect_partition(clusters, 1024);
}

TEST(BalancedClustering, OtherSizesAreWithinOneAndWithinBounds) {
  const auto clusters = balanced_clusters(random_embeddings(1000, 16, 2), 16);
  ASSERT_EQ(clusters.size(), 64u);  // ⌈1000 / 64⌉ = 16 ≤ 16 < ⌈1000 / 32⌉
  std::size_t smallest = 1000, largest = 0;
  for (const auto& cluster : clusters) {
    smallest = std::min(smallest, cluster.size());
    largest = std::max(largest, cluster.size());
  }
  EXPECT_GE(smallest, 8u);  // ⌈C/2⌉
  EXPECT_LE(largest, 16u);
  EXPECT_LE(largest - smallest, 1u);
  expect_partition(clusters, 1000);
}

TEST(BalancedClustering, SizesFollowTheStatedFormula) {
  // 2^t clusters, t the smallest depth with ⌈n / 2^t⌉ ≤ C; sizes ⌊n / 2^t⌋ or ⌈n / 2^t⌉.
  for (auto [n, c] : std::vector<std::pair<std::int64_t, std::int64_t>>{{7, 3}, {100, 2}, {333, 5}, {513, 16}, {64, 64}, {65, 64}, {10, 200}}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " C=" + std::to_string(c));
    std::int64_t t = 0;
    while ((n + (std::int64_t{1} << t) - 1) >> t > c) ++t;
    const auto clusters = balanced_clusters(random_embeddings(n, 8, static_cast<std::uint64_t>(n)), c, {.seed = 3});
    EXPECT_EQ(static_cast<std::int64_t>(clusters.size()), std::int64_t{1} << t);
    for (const auto& cluster : clusters) {
      const auto size = static_cast<std::int64_t>(cluster.size());
      EXPECT_TRUE(size == (n >> t) || size == (n + (std::int64_t{1} << t) - 1) >> t) << size;
      EXPECT_LE(size, c);
    }
    expect_partition(clusters, n);
  }
}

TEST(BalancedClustering, SingletonsAndOneCluster) {
  const auto x = random_embeddings(5, 4, 4);
  EXPECT_EQ(balanced_clusters(x, 1), (Clusters{{0}, {1}, {2}, {3}, {4}}));
  EXPECT_EQ(balanced_clusters(x, 5), (Clusters{{0, 1, 2, 3, 4}}));
  EXPECT_TRUE(balanced_clusters(torch::zeros({0, 4}), 4).empty());
  EXPECT_THROW(balanced_clusters(x, 0), ConfigError);
  EXPECT_THROW(balanced_clusters(torch::zeros({4}), 2), ConfigError);
}

TEST(BalancedClustering, DeterministicForASeed) {
  const auto x = random_embeddings(600, 16, 5);
  const auto a = balanced_clusters(x, 16, {.seed = 11});
  EXPECT_EQ(a, balanced_clusters(x, 16, {.seed = 11}));
  EXPECT_NE(a, balanced_clusters(x, 16, {.seed = 12}));
}

TEST(BalancedClustering, RecoversWellSeparatedBlobs) {
  // 8 tight blobs of 128 points around random unit centres, rows shuffled.
  const std::int64_t blobs = 8, per_blob = 128, d = 32, n = blobs * per_blob;
  torch::manual_seed(6);
  const auto centres = unit_rows(torch::randn({blobs, d}));
  const auto blob_of = torch::randperm(n).remainder(blobs);
  const auto x = unit_rows(centres.index_select(0, blob_of) + 0.02 * torch::randn({n, d}));
  for (std::uint64_t seed : {0u, 1u, 2u}) {
    const auto clusters = balanced_clusters(x, per_blob, {.seed = seed});
    ASSERT_EQ(clusters.size(), static_cast<std::size_t>(blobs));
    std::set<std::int64_t> blobs_found;
    for (const auto& cluster : clusters) {
      std::set<std::int64_t> labels;
      for (auto row : cluster) labels.insert(blob_of[row].item<std::int64_t>());
      EXPECT_EQ(labels.size(), 1u) << "a cluster mixes blobs";
      blobs_found.insert(labels.begin(), labels.end());
    }
    EXPECT_EQ(blobs_found.size(), static_cast<std::size_t>(blobs));
  }
}

TEST(BalancedClustering, GroupsSimilarRows) {
  // On mildly clustered data, rows share a cluster with far more similar rows than chance would give.
  torch::manual_seed(7);
  const std::int64_t n = 2048, d = 16;
  const auto centres = unit_rows(torch::randn({64, d}));
  const auto x = unit_rows(centres.index_select(0, torch::randint(0, 64, {n})) + 0.15 * torch::randn({n, d}));
  const auto clusters = balanced_clusters(x, 16);
  double within = 0;
  for (const auto& cluster : clusters) {
    const auto rows = x.index_select(0, torch::tensor(cluster, torch::kInt64));
    within += (torch::mm(rows, rows.t()).sum().item<double>() - static_cast<double>(cluster.size())) /
              static_cast<double>(cluster.size() * (cluster.size() - 1));
  }
  within /= static_cast<double>(clusters.size());
  const double overall = (x.sum(0).pow(2).sum().item<double>() - n) / static_cast<double>(n * (n - 1));
  EXPECT_GT(within, overall + 0.4);
}

TEST(BalancedClustering, NodesReadInSlicesGiveTheSameClusters) {
  // A tile of 64 floats holds 4 rows of 16, and a copy of 1 byte fits no node: every node of every level is read
  // a slice at a time (in place, in the embeddings' own dtype), as the first levels of millions of queries are.
  // Then copied nodes read in slices. The split must not change.
  torch::manual_seed(9);
  const std::int64_t n = 1000, d = 16;
  const auto centres = unit_rows(torch::randn({40, d}));
  const auto x = unit_rows(centres.index_select(0, torch::randint(0, 40, {n})) + 0.1 * torch::randn({n, d}));
  const auto whole = balanced_clusters(x, 16, {.seed = 4});
  const auto sliced = balanced_clusters(x, 16, {.seed = 4, .tile_floats = 64, .copy_bytes = 1});
  expect_partition(sliced, n);
  EXPECT_EQ(sliced, whole);
  EXPECT_EQ(balanced_clusters(x, 16, {.seed = 4, .tile_floats = 64}), whole);
  // Half precision is read and converted a slice at a time too: the same clusters as its float copy.
  const auto half = x.to(torch::kHalf);
  EXPECT_EQ(balanced_clusters(half, 16, {.seed = 4, .tile_floats = 64, .copy_bytes = 1}), balanced_clusters(half.to(torch::kFloat), 16, {.seed = 4}));
}

class CancelAtOnce : public Progress {
 public:
  void start(std::string_view, std::int64_t total) override { total_ = total; }
  void update(std::int64_t) override {}
  void finish() override {}
  bool cancelled() const override { return true; }
  std::int64_t total_ = -1;
};

TEST(BalancedClustering, ReportsLevelsAndHonoursCancel) {
  CancelAtOnce progress;
  EXPECT_THROW(balanced_clusters(random_embeddings(100, 4, 8), 10, {.progress = &progress}), Cancelled);
  EXPECT_EQ(progress.total_, 4);  // 100 → 50 → 25 → 13 → 7
}

}  // namespace
}  // namespace xmc
