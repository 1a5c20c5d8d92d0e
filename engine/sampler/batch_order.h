#pragma once
// Engine-internal (includes torch). One way of ordering an epoch's training queries before QueryBatcher cuts
// them into batches: a registered batch order (the config's sampler.type; engine/registry/component_list.h
// lists them). Each order's file defines `make_NAME_batch_order`; make_batch_order() finds the config's.
#include <torch/torch.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/core/portable_random.h"  // uniform_index, shuffle_rows: the batch orders' draws
#include "engine/core/progress.h"

namespace xmc {

class ComponentConfig;

class BatchOrder {
 public:
  virtual ~BatchOrder() = default;

  /// Whether epoch `epoch` of `num_queries` training queries needs the query embeddings of the last pass
  /// (rows = training rows, L2-normalised).
  virtual bool needs_embeddings(std::int64_t /*epoch*/, std::int64_t /*num_queries*/) const { return false; }
  /// What the epoch's refresh of the order is, for progress ("clustering queries (C = 16)"); asked when
  /// needs_embeddings() says so.
  virtual std::string refresh_phase(std::int64_t /*epoch*/, std::int64_t /*num_queries*/) const { return "ordering queries"; }
  /// The queries of epoch `epoch` in the order batches take them: a permutation of `queries` drawn from `rng`.
  /// `embeddings` is defined when needs_embeddings(epoch); work between steps reports to `progress` when given.
  virtual std::vector<std::int64_t> order(std::int64_t epoch, const std::vector<std::int64_t>& queries, const torch::Tensor& embeddings,
                                          std::mt19937_64& rng, Progress* progress) = 0;

  /// The order's own state in checkpoints (clusters), as text; load_state() gets what save_state() wrote (also
  /// an empty text: a checkpoint of another order) and checks it against `queries` (throws Error when corrupt).
  virtual void save_state(std::ostream& /*out*/) const {}
  virtual void load_state(std::istream& /*in*/, const std::vector<std::int64_t>& /*queries*/) {}
};

/// The batch order config.get<QueryBatcherOptions>().type names (engine/registry/batch_order_factories.cpp).
std::unique_ptr<BatchOrder> make_batch_order(const ComponentConfig& config);

}  // namespace xmc
