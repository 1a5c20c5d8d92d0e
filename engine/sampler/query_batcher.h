#pragma once
// Engine-internal (includes torch). Orders training queries into batches for one epoch: random, or
// NGAME's clustered batches — balanced 2-means clusters of the current query embeddings, shuffled,
// concatenated and cut into batches, so that each query's in-batch negatives are hard. The cluster
// size follows a curriculum: 1 (random) before `start_epoch`, then C, doubling at each `grow_at` epoch;
// clusters are recomputed every `refresh_every` epochs from the embeddings of the last pass.
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/sampler/query_batcher_options.h"

namespace xmc {


class QueryBatcher {
 public:
  /// @param queries  the training rows to batch (rows without positives already left out)
  QueryBatcher(QueryBatcherOptions options, std::vector<std::int64_t> queries, std::uint64_t seed);

  /// Cluster size in force at `epoch` (1 = random batches).
  std::int64_t cluster_size_at(std::int64_t epoch) const;
  /// Whether epoch `epoch` needs fresh clusters (and so the caller must pass current embeddings).
  bool needs_embeddings(std::int64_t epoch) const;

  /// The batches of one epoch. `embeddings` ([num_rows x d], row r = training row r, L2-normalised)
  /// are required when needs_embeddings(epoch). Clustering reports to `progress` when given.
  std::vector<std::vector<std::int64_t>> epoch_batches(std::int64_t epoch, const torch::Tensor& embeddings = {},
                                                       Progress* progress = nullptr);

  /// Sampler state for checkpoints: RNG and current clusters.
  std::string save_state() const;
  void load_state(const std::string& state);

  std::mt19937_64& rng() { return rng_; }

 private:
  void shuffle(std::vector<std::int64_t>& v);

  QueryBatcherOptions options_;
  std::vector<std::int64_t> queries_;
  std::mt19937_64 rng_;
  std::vector<std::vector<std::int64_t>> clusters_;
  std::int64_t clusters_size_ = 0;  ///< C the clusters were made with
};

/// Uniform integer in [0, n) from a 64-bit engine; portable (std::uniform_int_distribution is not).
inline std::int64_t uniform_index(std::mt19937_64& rng, std::int64_t n) {
  return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
}

/// `order` cut into consecutive batches of `batch_size`, a last batch under a quarter of it merged into the
/// one before (it would have almost no in-batch negatives).
std::vector<std::vector<std::int64_t>> cut_into_batches(const std::vector<std::int64_t>& order, std::int64_t batch_size);
/// How many batches cut_into_batches makes of `queries` queries.
std::int64_t batch_count(std::int64_t queries, std::int64_t batch_size);

}  // namespace xmc
