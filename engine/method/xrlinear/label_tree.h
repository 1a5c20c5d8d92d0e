#pragma once
// xrlinear's label tree (PECOS's hierarchical k-means over PIFA label vectors): labels are split by balanced
// spherical 2-means, recursively, until a cluster holds at most max_leaf labels; the binary levels are then
// taken `log2(branching)` at a time, so the tree's nodes have up to `branching` children. Plain C++.
//
// A split is the rule of NGAME's batches (engine/sampler/balanced_clustering.h) on sparse rows: the centroids
// c0, c1 start as two distinct random rows of the node; each iteration orders the rows by ⟨x, c1⟩ − ⟨x, c0⟩,
// gives the top ⌊n/2⌋ to c1 (ties: the lower label id) and re-computes c0, c1 as the normalised means of their
// halves, until nothing moves or `iterations` are done. Sibling sizes differ by at most one.
//
// Levels: level 0 is the root; the nodes of level t + 1 are the children of level t's nodes, each node's children
// adjacent; the last level holds the labels (positions in `labels`). A tree with L ≤ max_leaf has one level of
// rankers: the root's children are the labels.
#include <cstdint>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

struct LabelTreeOptions {
  std::int64_t branching = 16;  ///< children per node, a power of two >= 2
  std::int64_t max_leaf = 100;  ///< most labels under a leaf cluster
  std::int64_t iterations = 20; ///< 2-means iterations per split
  std::uint64_t seed = 0;       ///< picks the starting rows of every split
};

struct LabelTree {
  /// child_offsets[t][j] .. child_offsets[t][j + 1]: the children of node j of level t, as nodes of level t + 1.
  /// child_offsets[0] = {0, root's child count}; the last entry's children are label positions.
  std::vector<std::vector<std::int64_t>> child_offsets;
  std::vector<std::int32_t> labels;  ///< the label at each position of the last level

  /// Levels with rankers (the root's children .. the labels).
  std::int64_t ranker_levels() const { return static_cast<std::int64_t>(child_offsets.size()); }
  /// Nodes of level t (t = 0 is the root).
  std::int64_t nodes_at(std::int64_t level) const {
    return level == 0 ? 1 : child_offsets[static_cast<std::size_t>(level - 1)].back();
  }
};

/// The tree over the rows of `label_vectors` (L2-normalised; an all-zero row is a label with no features).
/// Throws ConfigError when branching is not a power of two >= 2, max_leaf < 1 or iterations < 1.
LabelTree build_label_tree(const CsrMatrix& label_vectors, const LabelTreeOptions& options, Progress& progress = silent_progress());

/// Throws Error naming what is wrong when `tree` is not a tree over `num_labels` labels (each exactly once,
/// offsets ascending, every level's children covering the next level): a checkpoint's tree is checked before use.
void check_label_tree(const LabelTree& tree, std::int64_t num_labels);

}  // namespace xmc
