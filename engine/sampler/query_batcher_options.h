#pragma once
// How an epoch's training queries are cut into batches (plain data, no torch): the config's `sampler.type` (a
// registered batch order, XMC_FOR_EACH_BATCH_ORDER) is bound to this struct; batch_size is the run's. An order
// with options of its own keeps them beside it (cluster_batch_options.h).
#include <cstdint>
#include <string>
#include <vector>

namespace xmc {

struct OptionGroup;

struct QueryBatcherOptions {
  std::string type = "random";    ///< the batch order: a registered one (random | cluster)
  std::int64_t batch_size = 256;  ///< not a key of its own: the run's batch_size
};

/// sampler.type, one of `orders` (the registered batch orders).
OptionGroup query_batcher_option_group(const std::vector<std::string>& orders);

}  // namespace xmc
