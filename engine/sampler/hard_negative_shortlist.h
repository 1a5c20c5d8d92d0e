#pragma once
// Engine-internal (includes torch). Each training query's hard-negative shortlist: the top-S labels by embedding
// similarity with the query's own positives removed (DEXML/UniDEC hard negatives). Exact top-S costs queries ×
// labels inner products, hours at LF-AmazonTitles-1.3M's size on a CPU; above a label count the shortlists come
// from an HNSW graph over the labels instead, and their recall against the exact ones is measured on a sample
// of the queries and reported, so a run's log says how approximate its negatives were.
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

struct ShortlistSearch {
  std::string kind = "exact";  ///< exact | hnsw | auto
  std::int64_t ann_above = 200000;  ///< with auto: hnsw from this many labels
  std::int64_t recall_sample = 1000;  ///< queries the approximate shortlists are checked on against exact ones
};

/// How a shortlist was found.
struct ShortlistReport {
  bool approximate = false;
  double recall = 1.0;          ///< mean over the sampled queries of |approximate ∩ exact| / |exact|
  std::int64_t sampled = 0;     ///< queries the recall was measured on
  /// One line for the run's log: "hard-negative shortlists: HNSW over L labels, recall@S 0.97 against exact on
  /// 1000 sampled queries" (or "exact").
  std::string describe(std::int64_t labels, std::int64_t size) const;
};

/// @param queries  [N x d] query embeddings (row r = training row r)
/// @param labels   [L x d] label embeddings
/// @param positives train label matrix (N rows)
/// @param progress told the rows done, as task "hard-negative shortlists (exact top-S)" or "(HNSW top-S)"
/// @param report   when given, filled with how the shortlist was found
/// @return [N x S] int64 CPU tensor of label ids, best first; -1 where fewer than S negatives exist (or, with
///         HNSW, were found)
torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress = silent_progress(), const ShortlistSearch& search = {},
                                      ShortlistReport* report = nullptr);

}  // namespace xmc
