#pragma once
// The labels of a query's nearest training queries: a second opinion beside xrlinear's label tree. The training
// queries' tf-idf rows (L2-normalised, so inner products are cosines) are kept as an inverted index; a query's
// `neighbours` most similar training rows each vote for their labels with their similarity, and a label's score
// is its share of the neighbourhood: the sum of its votes over the sum of the neighbours' similarities, in [0, 1]
// (1: every neighbour has it). A share keeps how sure the neighbourhood is, so it can be weighed against the
// tree's path scores, themselves in [0, 1], as it is. The tree generalises from words to label clusters and is strong on frequent labels; the
// neighbours recall the rare labels of near-duplicate texts, which the tree's rankers, trained on few positives,
// rank low. Plain C++.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/data/csr_matrix.h"

namespace xmc {

struct LabelVote {
  std::int64_t label;
  float score;
};

class NeighbourVotes {
 public:
  /// `train_features` [n x F] rows (L2-normalised tf-idf of the training queries) and `train_labels` [n x L].
  /// Throws Error when the two disagree on n.
  NeighbourVotes(const CsrMatrix& train_features, const CsrMatrix& train_labels);

  /// Per-thread working memory of votes(): reused across queries so each query costs its postings, not n + L.
  struct Scratch {
    std::vector<float> similarity;  ///< [n], 0 except at touched rows
    std::vector<char> touched;      ///< [n], 1 at touched rows (a sum can come back to 0)
    std::vector<std::int64_t> touched_rows;
    std::vector<double> score;      ///< [L], 0 except at touched labels (summed like the total, so a share is at most 1)
    std::vector<std::int64_t> touched_labels;
  };

  /// The `top` best-voted labels of row `row` of `queries` (features in the training rows' space) by their
  /// `neighbours` most similar training rows, with their shares, best first (ties: the smaller label id first). Rows with no
  /// positive similarity vote for nothing.
  std::vector<LabelVote> votes(const CsrMatrix& queries, std::int64_t row, std::int64_t neighbours, std::int64_t top, Scratch& scratch) const;

  std::int64_t num_features() const { return static_cast<std::int64_t>(postings_start_.size()) - 1; }
  std::int64_t num_labels() const { return labels_.cols; }

 private:
  std::vector<std::int64_t> postings_start_;  ///< [F + 1]: feature f's postings are [start[f], start[f + 1])
  std::vector<std::int32_t> posting_rows_;
  std::vector<float> posting_values_;
  CsrMatrix labels_;
};

/// One query's candidates in a fusion of the tree with its neighbours' votes, and each one's share of the votes.
struct VotedCandidates {
  std::vector<std::int64_t> labels;
  std::vector<float> shares;  ///< 0 for a tree candidate no neighbour votes for
};

/// Row `row` of `queries`: the `voted_top` labels its `neighbours` nearest training rows vote for most, then the
/// tree's candidates `tree_labels` (best first, -1 for none) not among them. `out` is cleared first.
void voted_candidates(const NeighbourVotes& votes, const CsrMatrix& queries, std::int64_t row, std::int64_t neighbours, std::int64_t voted_top,
                      std::span<const std::int64_t> tree_labels, NeighbourVotes::Scratch& scratch, VotedCandidates& out);

}  // namespace xmc
