#pragma once
// Several xrlinear label trees as one ranker (xrlinear.trees): each tree is built from its own 2-means starts, so
// the trees cut the labels into different clusters and their rankers err on different queries. A query's
// candidates are the union of every tree's beam, and a label's score is the mean of its path scores in the trees
// (computed for any label, wherever each beam went). One tree ranks exactly as its beam search does. Plain C++.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/method/xrlinear/beam_search.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/tree_rankers.h"

namespace xmc {

/// One label tree and its rankers.
struct TreeModel {
  LabelTree tree;
  TreeRankers rankers;
};

class TreeEnsembleSearch {
 public:
  /// `trees` (at least one, all over the same labels) must outlive this object and stay where they are.
  TreeEnsembleSearch(const std::vector<TreeModel>& trees, const BeamSearchOptions& options, std::int64_t num_features);

  /// Fills rows 0 .. end - begin of `labels` and `scores` ([rows x top], row-major) with the `top` best labels of
  /// rows [begin, end) of `queries`, best first (ties: the smaller label id first), padded with -1 and 0.
  void rank(const CsrMatrix& queries, std::int64_t begin, std::int64_t end, std::int64_t top, std::int64_t* labels, float* scores) const;
  /// The mean over the trees of each label's path score for row `row` (BeamSearch::path_scores, `dense` its
  /// reusable working memory).
  std::vector<float> path_scores(const CsrMatrix& queries, std::int64_t row, std::span<const std::int64_t> labels,
                                 std::vector<float>* dense = nullptr) const;

 private:
  std::vector<BeamSearch> searches_;
};

}  // namespace xmc
