#pragma once
// xrlinear's inference: beam search down the label tree. At each level the children of the kept nodes are scored
// by their rankers, a node's score being its parent's times the ranker's transformed margin; the `beam` best are
// kept, and at the last level the `top` best labels are returned. Plain C++.
//
// Transforms (PECOS's post-processors): "l3-hinge" exp(−max(0, 1 − z)³) and "sigmoid" 1 / (1 + e^−z).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/tree_rankers.h"

namespace xmc {

struct BeamSearchOptions {
  std::int64_t beam = 10;
  std::string transform = "l3-hinge";  ///< or "sigmoid"
};

/// Throws ConfigError naming the xrlinear key when an option is out of range.
void check_beam_search_options(const BeamSearchOptions& options);

/// Ranks labels for rows [begin, end) of `queries` ([n x F], F = the rankers' features): fills rows
/// 0 .. end - begin of `labels` and `scores` ([rows x top], row-major), best first, padded with -1 and 0.
class BeamSearch {
 public:
  BeamSearch(const LabelTree& tree, const TreeRankers& rankers, BeamSearchOptions options, std::int64_t num_features);
  void rank(const CsrMatrix& queries, std::int64_t begin, std::int64_t end, std::int64_t top, std::int64_t* labels, float* scores) const;
  /// The score the tree gives each of `labels` for query row `row`, wherever the beam would have gone: the product
  /// of the transformed margins of the label and of its ancestors. Fusing another ranking's candidates with the
  /// tree's needs these: a label outside the beam scored 0 could never be weighed.
  /// `dense`, when given, is working memory reused across calls (num_features zeros between calls, as this leaves
  /// it): a call without it zero-fills a vector of every feature, which dominates for short queries.
  std::vector<float> path_scores(const CsrMatrix& queries, std::int64_t row, std::span<const std::int64_t> labels,
                                 std::vector<float>* dense = nullptr) const;

 private:
  double transformed(double z) const;

  const LabelTree& tree_;
  const TreeRankers& rankers_;
  BeamSearchOptions options_;
  std::int64_t num_features_;
  std::vector<std::vector<std::int64_t>> parents_;  ///< parents_[t][j]: the parent (in level t) of node j of level t + 1
  std::vector<std::int64_t> position_of_;          ///< each label's position in the last level
};

}  // namespace xmc
