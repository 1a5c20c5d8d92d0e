#pragma once
// NGAME's clustered batches (plain data, no torch): the `sampler.*` keys of sampler.type=cluster, and what the
// order registers of itself without being built (its option group, its marks on the training plots).
#include <cstdint>
#include <vector>

namespace xmc {

struct BatchOrderInfo;

struct ClusterBatchOptions {
  std::int64_t cluster_size = 16;     ///< C at start_epoch
  std::int64_t start_epoch = 1;       ///< first clustered epoch (0-based; earlier epochs are random)
  std::int64_t refresh_every = 1;     ///< epochs between re-clustering
  std::vector<std::int64_t> grow_at;  ///< epochs at which C doubles
};

/// C at `epoch` (before start_epoch too: the size clustering will start with), before the cap at the query count.
std::int64_t cluster_size_at(const ClusterBatchOptions& options, std::int64_t epoch);

BatchOrderInfo cluster_batch_order_info();

}  // namespace xmc
