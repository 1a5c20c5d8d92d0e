// Spherical k-means on rows whose groups are known: it finds them, its centroids are their directions, and it
// refuses what it cannot cluster.
#include "engine/index/spherical_kmeans.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/core/error.h"

namespace xmc {
namespace {

// 4 groups of 50 rows around the first 4 axes of R^8, at lengths 1 to 5 (k-means compares directions only).
struct Groups {
  torch::Tensor rows;
  std::vector<std::int64_t> group;
};
Groups four_axes() {
  torch::manual_seed(4);
  Groups g;
  std::vector<torch::Tensor> parts;
  for (std::int64_t i = 0; i < 200; ++i) {
    const std::int64_t axis = (i * 7) % 4;
    torch::Tensor row = 0.1 * torch::randn({8});
    row[axis] += 1.0;
    parts.push_back(row * static_cast<double>(1 + i % 5));
    g.group.push_back(axis);
  }
  g.rows = torch::stack(parts);
  return g;
}

TEST(SphericalKMeans, FindsGroupsOfDirectionsWhateverTheRowsLengths) {
  const Groups g = four_axes();
  const SphericalKMeans result = spherical_kmeans(g.rows, 4, {.seed = 3});
  ASSERT_EQ(result.assignment.size(0), 200);
  ASSERT_EQ(result.centroids.sizes(), (std::vector<std::int64_t>{4, 8}));
  // Every group is one cluster and every cluster one group.
  std::map<std::int64_t, std::set<std::int64_t>> clusters_of_group, groups_of_cluster;
  for (std::int64_t i = 0; i < 200; ++i) {
    const std::int64_t cluster = result.assignment[i].item<std::int64_t>();
    clusters_of_group[g.group[static_cast<std::size_t>(i)]].insert(cluster);
    groups_of_cluster[cluster].insert(g.group[static_cast<std::size_t>(i)]);
  }
  for (const auto& [group, clusters] : clusters_of_group) EXPECT_EQ(clusters.size(), 1u) << "group " << group << " split";
  EXPECT_EQ(groups_of_cluster.size(), 4u);
  // Centroids are unit rows pointing along their group's axis (cosine > 0.98 with noise of 0.1 per coordinate).
  for (std::int64_t i = 0; i < 200; i += 50) {
    const torch::Tensor centroid = result.centroids[result.assignment[i].item<std::int64_t>()];
    EXPECT_NEAR(centroid.norm().item<double>(), 1.0, 1e-5);
    EXPECT_GT(centroid[g.group[static_cast<std::size_t>(i)]].item<double>(), 0.98);
  }
}

TEST(SphericalKMeans, BfloatRowsClusterAsTheirValuesInFloat32Do) {
  // Rows held in bfloat16 are read where they lie, a chunk at a time: the clusters are those of the same values in
  // float32.
  const Groups g = four_axes();
  const torch::Tensor rounded = g.rows.to(torch::kBFloat16);
  const SphericalKMeans from_bfloat16 = spherical_kmeans(rounded, 4, {.seed = 3});
  const SphericalKMeans from_float32 = spherical_kmeans(rounded.to(torch::kFloat), 4, {.seed = 3});
  EXPECT_TRUE(torch::equal(from_bfloat16.assignment, from_float32.assignment));
  EXPECT_TRUE(torch::allclose(from_bfloat16.centroids, from_float32.centroids, 1e-6, 1e-6));
  EXPECT_EQ(from_bfloat16.centroids.scalar_type(), torch::kFloat);
}

TEST(SphericalKMeans, MoreClustersThanRowsGivesOneClusterARow) {
  const torch::Tensor rows = torch::eye(3);
  const SphericalKMeans result = spherical_kmeans(rows, 10);
  EXPECT_EQ(result.centroids.size(0), 3) << "k is clamped to the row count";
  EXPECT_EQ(std::get<0>(torch::_unique(result.assignment)).size(0), 3);
  EXPECT_TRUE(torch::allclose(result.centroids.index_select(0, result.assignment), rows));
}

TEST(SphericalKMeans, RefusesRowsItCannotCluster) {
  EXPECT_THROW(spherical_kmeans(torch::randn({10}), 2), ConfigError);
  EXPECT_THROW(spherical_kmeans(torch::randn({10, 4}), 0), ConfigError);
  EXPECT_EQ(spherical_kmeans(torch::randn({0, 4}), 3).assignment.size(0), 0);
}

}  // namespace
}  // namespace xmc
