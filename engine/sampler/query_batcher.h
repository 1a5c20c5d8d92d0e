#pragma once
// Engine-internal (includes torch). Cuts an epoch's training queries into batches, in the order the run's
// batch order gives them (batch_order.h: random, NGAME's clusters, ...), from one random stream of its own.
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/sampler/batch_order.h"

namespace xmc {

class QueryBatcher {
 public:
  /// @param queries  the training rows to batch (rows without positives already left out)
  QueryBatcher(std::unique_ptr<BatchOrder> order, std::int64_t batch_size, std::vector<std::int64_t> queries, std::uint64_t seed);

  /// Whether epoch `epoch` needs the query embeddings of the last pass (fresh clusters).
  bool needs_embeddings(std::int64_t epoch) const;
  /// What that refresh is, for progress ("clustering queries (C = 16)").
  std::string refresh_phase(std::int64_t epoch) const;

  /// The batches of one epoch. `embeddings` ([num_rows x d], row r = training row r, L2-normalised)
  /// are required when needs_embeddings(epoch). Ordering work reports to `progress` when given.
  std::vector<std::vector<std::int64_t>> epoch_batches(std::int64_t epoch, const torch::Tensor& embeddings = {},
                                                       Progress* progress = nullptr);

  /// Sampler state for checkpoints: the RNG, then the order's own state (its clusters).
  std::string save_state() const;
  void load_state(const std::string& state);

  std::mt19937_64& rng() { return rng_; }

 private:
  std::unique_ptr<BatchOrder> order_;
  std::int64_t batch_size_;
  std::vector<std::int64_t> queries_;
  std::mt19937_64 rng_;
};

/// `order` cut into consecutive batches of `batch_size`, a last batch under a quarter of it merged into the
/// one before (it would have almost no in-batch negatives).
std::vector<std::vector<std::int64_t>> cut_into_batches(const std::vector<std::int64_t>& order, std::int64_t batch_size);
/// How many batches cut_into_batches makes of `queries` queries.
std::int64_t batch_count(std::int64_t queries, std::int64_t batch_size);

}  // namespace xmc
