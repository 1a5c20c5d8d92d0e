#pragma once
// Engine-internal (includes torch). UniDEC's pick-some-labels (PSL) label pool of a batch: each query
// brings at most β of its positives (sampled without replacement) and η hard negatives from its shortlist
// window; the pool L_B is their union, and every positive of a query that is in the pool counts
// (P_i^B = P_i ∩ L_B), whichever query brought it. The label→query direction uses the mask's transpose.
// Built on the host by linear passes over the batch's positives (sorts of the pool, a label → column table):
// no per-element tensor ops, whose dispatch would cost more than the work.
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <span>

#include "engine/data/csr_matrix.h"

namespace xmc {

struct PslPoolOptions {
  std::int64_t positives_per_query = 3;  ///< β: positives sampled per query (fewer when it has fewer)
  std::int64_t pool_size = 0;            ///< cap on |L_B| (0 = none); sampled positives are never dropped by it
  bool all_labels = false;               ///< the pool is every label (negatives = all; small label sets)
};

struct PslBatch {
  /// [B'] int64: positions in the batch of the queries the loss uses — those with a pooled positive
  /// (a query without labels is dropped from both directions).
  torch::Tensor kept;
  torch::Tensor labels;         ///< [P] int64 label ids: the sampled positives (ascending), then the negatives
  torch::Tensor positive_mask;  ///< [B' x P] bool: label j is a positive of kept query i
  /// The mask's true entries, each once, by row (as positive_mask.nonzero() lists them): [N] int64 rows and
  /// columns. The losses take them from here instead of scanning the mask.
  torch::Tensor pair_rows, pair_columns;
};

/// @param labels          train label matrix (rows = queries)
/// @param batch           query rows of the batch
/// @param rng             the label-pool random stream (positives and the cap's choice of negatives)
/// @param hard_negatives  [batch.size() x η] int64 label ids (-1 = none), or undefined for no hard negatives
PslBatch build_psl_batch(const CsrMatrix& labels, std::span<const std::int64_t> batch, std::mt19937_64& rng, const PslPoolOptions& options,
                         const torch::Tensor& hard_negatives = {});

/// Each training query's hard-negative shortlist, shuffled at every refresh so that the η negatives of the
/// k-th epoch after a refresh are entries [kη, (k+1)η) of the shuffled list: over a refresh window of τ
/// epochs a query sees η·τ distinct shortlist entries (UniDEC's |H| = η·τ) and none twice (the list wraps
/// around only when η·τ exceeds its size).
class HardNegativeWindow {
 public:
  /// @param shortlist [N x S] int32 or int64 label ids, -1 = none (hard_negative_shortlist's output). Handed over
  ///                  (std::move of the only handle) an int32 one is shuffled in place; otherwise it is left as it was.
  void refresh(torch::Tensor shortlist, std::int64_t epoch, std::mt19937_64& rng);
  /// Drops the shortlist (ready() turns false) so that its memory is free while the next one is searched.
  void release() { shuffled_ = torch::Tensor(); }
  bool ready() const { return shuffled_.defined(); }
  /// The shortlist as held (undefined before the first refresh): a handle sharing it.
  torch::Tensor shortlist() const { return shuffled_; }
  /// The epoch of the last refresh (-1 before the first).
  std::int64_t refreshed_at() const { return epoch_; }
  /// [batch.size() x per_query] int64: the batch queries' negatives for `epoch` (-1 where the shortlist has none).
  torch::Tensor draw(std::span<const std::int64_t> batch, std::int64_t epoch, std::int64_t per_query) const;

  void save(torch::serialize::OutputArchive& archive, const std::string& prefix) const;
  void load(torch::serialize::InputArchive& archive, const std::string& prefix);

 private:
  torch::Tensor shuffled_;  ///< [N x S] int32 label ids, -1 = none
  std::int64_t epoch_ = -1;
};

}  // namespace xmc
