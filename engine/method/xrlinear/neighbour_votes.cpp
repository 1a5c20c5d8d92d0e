#include "engine/method/xrlinear/neighbour_votes.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace xmc {

NeighbourVotes::NeighbourVotes(const CsrMatrix& train_features, const CsrMatrix& train_labels) : labels_(train_labels) {
  if (train_features.rows != train_labels.rows)
    throw Error("neighbour votes: " + std::to_string(train_features.rows) + " feature rows but " + std::to_string(train_labels.rows) + " label rows");
  // The transpose of the features, by counting sort: each feature's rows in ascending order.
  postings_start_.assign(static_cast<std::size_t>(train_features.cols) + 1, 0);
  for (const std::int32_t f : train_features.indices) ++postings_start_[static_cast<std::size_t>(f) + 1];
  for (std::size_t f = 1; f < postings_start_.size(); ++f) postings_start_[f] += postings_start_[f - 1];
  posting_rows_.resize(train_features.indices.size());
  posting_values_.resize(train_features.indices.size());
  std::vector<std::int64_t> next(postings_start_.begin(), postings_start_.end() - 1);
  for (std::int64_t row = 0; row < train_features.rows; ++row) {
    const auto cols = train_features.row_indices(row);
    const auto vals = train_features.row_values(row);
    for (std::size_t j = 0; j < cols.size(); ++j) {
      const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(cols[j])]++);
      posting_rows_[at] = static_cast<std::int32_t>(row);
      posting_values_[at] = vals[j];
    }
  }
}

std::vector<LabelVote> NeighbourVotes::votes(const CsrMatrix& queries, std::int64_t row, std::int64_t neighbours, std::int64_t top,
                                             Scratch& scratch) const {
  std::vector<LabelVote> out;
  if (neighbours <= 0 || top <= 0) return out;
  scratch.similarity.resize(static_cast<std::size_t>(labels_.rows), 0.0f);
  scratch.touched.resize(static_cast<std::size_t>(labels_.rows), 0);
  scratch.score.resize(static_cast<std::size_t>(labels_.cols), 0.0);
  // Similarities to every training row sharing a feature.
  const auto cols = queries.row_indices(row);
  const auto vals = queries.row_values(row);
  for (std::size_t j = 0; j < cols.size(); ++j) {
    const auto f = static_cast<std::size_t>(cols[j]);
    if (f + 1 >= postings_start_.size()) continue;  // a feature no training row has
    const float q = vals[j];
    for (std::int64_t p = postings_start_[f]; p < postings_start_[f + 1]; ++p) {
      const auto r = static_cast<std::size_t>(posting_rows_[static_cast<std::size_t>(p)]);
      if (!scratch.touched[r]) {
        scratch.touched[r] = 1;
        scratch.touched_rows.push_back(static_cast<std::int64_t>(r));
      }
      scratch.similarity[r] += q * posting_values_[static_cast<std::size_t>(p)];
    }
  }
  // The most similar rows (ties: the smaller row first, so the result does not depend on the order touched).
  auto& rows = scratch.touched_rows;
  const auto by_similarity = [&](std::int64_t a, std::int64_t b) {
    const float sa = scratch.similarity[static_cast<std::size_t>(a)], sb = scratch.similarity[static_cast<std::size_t>(b)];
    return sa != sb ? sa > sb : a < b;
  };
  const auto kept_rows = std::min<std::size_t>(rows.size(), static_cast<std::size_t>(neighbours));
  // nth_element then a sort of the kept: linear in the rows touched, which a common word makes most of them.
  if (kept_rows < rows.size()) std::nth_element(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(kept_rows), rows.end(), by_similarity);
  std::sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(kept_rows), by_similarity);
  double total = 0;
  for (std::size_t i = 0; i < kept_rows; ++i) {
    const float s = scratch.similarity[static_cast<std::size_t>(rows[i])];
    if (!(s > 0.0f)) break;  // sorted: the rest are no closer
    total += s;
    for (const std::int32_t label : labels_.row_indices(rows[i])) {
      double& v = scratch.score[static_cast<std::size_t>(label)];
      if (v == 0.0) scratch.touched_labels.push_back(label);
      v += s;
    }
  }
  for (const std::int64_t r : rows) {
    scratch.similarity[static_cast<std::size_t>(r)] = 0.0f;
    scratch.touched[static_cast<std::size_t>(r)] = 0;
  }
  rows.clear();
  // The best-voted labels.
  out.reserve(scratch.touched_labels.size());
  for (const std::int64_t label : scratch.touched_labels) {
    out.push_back({label, static_cast<float>(scratch.score[static_cast<std::size_t>(label)] / total)});
    scratch.score[static_cast<std::size_t>(label)] = 0.0;
  }
  scratch.touched_labels.clear();
  const auto kept = std::min<std::size_t>(out.size(), static_cast<std::size_t>(top));
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(kept), out.end(),
                    [](const LabelVote& a, const LabelVote& b) { return a.score != b.score ? a.score > b.score : a.label < b.label; });
  out.resize(kept);
  return out;
}

void voted_candidates(const NeighbourVotes& votes, const CsrMatrix& queries, std::int64_t row, std::int64_t neighbours, std::int64_t voted_top,
                      std::span<const std::int64_t> tree_labels, NeighbourVotes::Scratch& scratch, VotedCandidates& out) {
  out.labels.clear();
  out.shares.clear();
  // Every label the neighbours vote for, best first: the first voted_top are candidates, the rest only lend their
  // votes to the tree's candidates.
  const std::vector<LabelVote> all = votes.votes(queries, row, neighbours, votes.num_labels(), scratch);
  const std::size_t voted = std::min(all.size(), static_cast<std::size_t>(std::max<std::int64_t>(voted_top, 0)));
  for (std::size_t j = 0; j < voted; ++j) {
    out.labels.push_back(all[j].label);
    out.shares.push_back(all[j].score);
  }
  for (const std::int64_t label : tree_labels) {
    if (label < 0) continue;
    const auto at = std::find_if(all.begin(), all.end(), [&](const LabelVote& v) { return v.label == label; });
    if (at != all.end() && static_cast<std::size_t>(at - all.begin()) < voted) continue;  // a candidate already
    out.labels.push_back(label);
    out.shares.push_back(at == all.end() ? 0.0f : at->score);
  }
}

}  // namespace xmc
