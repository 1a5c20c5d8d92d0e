#pragma once
// Engine-internal (includes torch). Flat spherical k-means: the coarse quantiser of the clustered (IVF) search.
// Unlike the balanced 2-means tree (balanced_clustering.h), whose every split halves a node by one hyperplane
// and so cuts through natural groups of high-dimensional data, k centroids compete for every row: a group of
// similar rows stays in one cluster, which is what a search that probes only a few clusters needs. Sizes are
// not balanced.
//
// Algorithm. A sample of at most `sample_per_centroid` × k rows is drawn without replacement from the seed; the
// centroids start from k-means++ seeding on (the first max(2k, 4096) rows of) it; each iteration assigns every sample row to its most similar centroid by
// inner product of unit rows and sets each centroid to the normalised mean of its rows; a centroid left with no
// rows takes a sample row drawn afresh. Then every row is assigned once. All products go through matrix
// products in chunks of rows, so memory is O(chunk × k) besides the result.
#include <torch/torch.h>

#include <cstdint>

namespace xmc {

struct SphericalKMeansOptions {
  std::int64_t iterations = 10;
  std::int64_t sample_per_centroid = 64;  ///< the centroids are trained on at most this many rows per centroid
  std::uint64_t seed = 0;
};

struct SphericalKMeans {
  torch::Tensor centroids;   ///< [k, d] float32, unit rows (a zero row for a cluster without rows)
  torch::Tensor assignment;  ///< [n] int64: each row's cluster
};

/// k clusters of the rows of `rows` ([n, d] floating, CPU; rows need not be unit length: each is compared by
/// direction). k is clamped to [1, n]. Throws ConfigError for a tensor that is not 2-D or k < 1.
SphericalKMeans spherical_kmeans(const torch::Tensor& rows, std::int64_t k, const SphericalKMeansOptions& options = {});

}  // namespace xmc
