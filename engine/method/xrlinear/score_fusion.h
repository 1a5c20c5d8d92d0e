#pragma once
// xrlinear fused with a dense run: for one query, the candidates of both rankings (the tree's beam and the
// dense run's nearest labels) are scored by both, and ranked by
//   alpha · tree score + (1 − alpha) · (dense score − min) / (max − min)
// where the tree score is the label's path score (a product of transformed margins, in [0, 1]) and min, max
// are the query's lowest and highest dense score among its candidates (all equal: the dense part is 0). The
// two scales differ (a path score is a probability-like product, a dense score an inner product), so the
// dense side is brought to [0, 1] per query before weighing.
#include <cstdint>
#include <span>
#include <vector>

namespace xmc {

struct FusedLabel {
  std::int64_t label;
  float score;
};

/// The tree and the nearest training queries (xrlinear.knn): the `top` best of `labels` (distinct) by
///   alpha · tree score / the best tree score among them + (1 − alpha) · share
/// where a share is a label's part of its neighbours' votes (neighbour_votes.h), in [0, 1]. Path scores are
/// products of several margins, often far below 1 even for the right label, so each query's are taken relative
/// to its best: the weight then means the same whatever the tree's depth or sureness. All tree scores 0: the
/// shares alone decide.
std::vector<FusedLabel> fuse_with_shares(std::span<const std::int64_t> labels, std::span<const float> tree_scores, std::span<const float> shares,
                                         double alpha, std::int64_t top);
/// fuse_with_shares()'s score of every label, in their order (unsorted): the sparse side of a fusion of the tree,
/// the neighbours and a dense run, whose result then weighs against the dense scores as a tree score does.
std::vector<float> share_weighted_scores(std::span<const float> tree_scores, std::span<const float> shares, double alpha);

/// xrlinear fused with a dense run: the `top` best of `labels` (distinct) by the min-max rule at the top of this
/// file, best first (ties: the smaller label id first).
/// `tree_scores` and `dense_scores` are the labels' scores, in the same order.
std::vector<FusedLabel> fuse_scores(std::span<const std::int64_t> labels, std::span<const float> tree_scores, std::span<const float> dense_scores,
                                    double alpha, std::int64_t top);

}  // namespace xmc
