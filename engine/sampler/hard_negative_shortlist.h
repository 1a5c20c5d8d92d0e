#pragma once
// Engine-internal (includes torch). Each training query's hard-negative shortlist: the exact top-S
// labels by embedding similarity with the query's own positives removed (DEXML/UniDEC hard negatives).
#include <torch/torch.h>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

/// @param queries  [N x d] query embeddings (row r = training row r)
/// @param labels   [L x d] label embeddings
/// @param positives train label matrix (N rows)
/// @param progress told the rows done, as task "hard-negative shortlists (exact top-S)"
/// @return [N x S] int64 CPU tensor of label ids, best first; -1 where fewer than S negatives exist
torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, const torch::Tensor& labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress = silent_progress());

}  // namespace xmc
