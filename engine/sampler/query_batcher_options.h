#pragma once
// How an epoch's training queries are cut into batches (plain data, no torch): the config's `sampler.*` keys
// (query_batcher_options.cpp) are bound to these fields; batch_size is the run's.
#include <cstdint>
#include <string>
#include <vector>

namespace xmc {

struct OptionGroup;

struct QueryBatcherOptions {
  std::string type = "random";            ///< random | cluster
  std::int64_t batch_size = 256;          ///< not a key of its own: the run's batch_size
  std::int64_t cluster_size = 16;         ///< C at start_epoch
  std::int64_t start_epoch = 1;           ///< first clustered epoch (0-based; earlier epochs are random)
  std::int64_t refresh_every = 1;         ///< epochs between re-clustering
  std::vector<std::int64_t> grow_at;      ///< epochs at which C doubles
};

OptionGroup query_batcher_option_group();

}  // namespace xmc
