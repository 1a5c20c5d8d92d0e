#pragma once
// Engine-internal (includes torch). NGAME's balanced recursive 2-means (DESIGN.md section 3): groups
// similar query embeddings into clusters of (almost) equal size, so that batches cut from shuffled
// clusters are full of hard in-batch negatives.
//
// Algorithm. All rows start as one node. Level by level, every node is split in two: its centroids c0, c1
// start as two distinct random rows of the node; each iteration orders the node's rows by
// sim(c1) − sim(c0) = ⟨x, c1 − c0⟩, gives the top ⌊S/2⌋ rows to c1 and the rest to c0 (S = the largest
// node size of the level; ties go to the row with the lower id), and re-computes c0, c1 as the normalised
// means of their halves. A node stops early when no row changes side (a fixed point). Levels continue
// while a node is larger than cluster_size. All nodes of a level are processed together as padded
// batches of torch ops (cache-sized groups on the CPU), never row by row. The embeddings are read in place, in
// their own dtype: the nodes split at once are copied as floats only while the copies fit a part of the memory
// budget; bigger ones are read a slice at a time at every pass instead, so that memory beyond the embeddings
// stays bounded (row ids, one float per row, the budget's part).
//
// Sizes, exactly: let t be the smallest depth with ⌈n / 2^t⌉ ≤ C (C = cluster_size). The result has 2^t
// clusters (1 when n ≤ C; n singletons when C = 1) and every size is ⌊n / 2^t⌋ or ⌈n / 2^t⌉: sizes are
// within one of each other, at most C, and for n > C at least ⌊C/2⌋ (at least C/2 when C is even).
// n = 2^j · C gives 2^j clusters of exactly C rows. Every row appears in exactly one cluster.
//
// Order: clusters come in tree order (siblings adjacent); rows within a cluster are ascending. The result
// depends only on the embeddings, C, the seed and the iteration count — for a given device and thread
// count (floating-point sums may round differently elsewhere).
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "engine/core/progress.h"

namespace xmc {

struct BalancedClusteringOptions {
  std::uint64_t seed = 0;         ///< picks the two starting rows of every split (std::mt19937_64)
  std::int64_t iterations = 10;   ///< 2-means iterations (assignments) per split; fewer at a fixed point
  Progress* progress = nullptr;   ///< optional: one unit per tree level; cancelled() throws xmc::Cancelled
  std::int64_t tile_floats = 0;   ///< floats per op (0: sized for the device's cache)
  std::int64_t copy_bytes = 0;    ///< float copies of the nodes split at once (0: the memory budget's part, on a GPU at least the embeddings' size as floats); bigger nodes are read in place
};

/// Balanced clusters of the rows of `embeddings`.
/// @param embeddings   [n, d] floating tensor, rows L2-normalised, on any device
/// @param cluster_size C ≥ 1, the largest cluster size allowed
/// @return the clusters, as row ids (see the header comment for their sizes and order)
std::vector<std::vector<std::int64_t>> balanced_clusters(const torch::Tensor& embeddings, std::int64_t cluster_size,
                                                         const BalancedClusteringOptions& options = {});

}  // namespace xmc
