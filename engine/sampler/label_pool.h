#pragma once
// Engine-internal (includes torch). The labels a batch of queries is scored against, and which of them
// are positives of which query. Every query contributes sampled positives (one, or all of them); other
// queries' positives are its in-batch negatives; hard negatives from a shortlist can be added.
#include <torch/torch.h>

#include <random>
#include <span>
#include <vector>

#include "engine/data/csr_matrix.h"

namespace xmc {

struct LabelPool {
  std::vector<std::int64_t> labels;  ///< pool labels, unique, in order of first appearance
  torch::Tensor positive_mask;       ///< [batch x labels.size()] bool: label j is a positive of query i
};

struct LabelPoolOptions {
  bool all_positives = false;        ///< add every positive of each query (NGAME M4) instead of one sampled
  std::int64_t hard_per_query = 0;   ///< hard negatives sampled per query from `shortlist`
  bool all_labels = false;           ///< the pool is every label (negatives = all)
};

/// @param labels     train label matrix (rows = queries)
/// @param batch      query rows of the batch
/// @param shortlist  [num_queries x S] int32 (or int64) CPU tensor of hard-negative candidates, or undefined
LabelPool build_label_pool(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::mt19937_64& rng,
                           const LabelPoolOptions& options, const torch::Tensor& shortlist = {});

/// The positive mask of `batch` against an arbitrary list of labels.
torch::Tensor positive_mask(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::span<const std::int64_t> pool);

}  // namespace xmc
