#include "engine/sampler/query_batcher_options.h"

#include "engine/config/option_group_builder.h"

namespace xmc {

OptionGroup query_batcher_option_group() {
  constexpr std::int64_t no_max = std::numeric_limits<std::int64_t>::max();
  return OptionGroupBuilder<QueryBatcherOptions>("Batching")
      .text("sampler.type", &QueryBatcherOptions::type, {"random", "cluster"}, "Batches: random, or NGAME clusters of query embeddings")
      .when("sampler.type=cluster")
      .integer("sampler.cluster_size", &QueryBatcherOptions::cluster_size, 1, 1 << 20, "NGAME cluster size C once clustering starts")
      .when("sampler.type=cluster")
      .integer("sampler.start_epoch", &QueryBatcherOptions::start_epoch, 0, no_max, "First clustered epoch (0-based); earlier epochs are random")
      .when("sampler.type=cluster")
      .integer("sampler.refresh_every", &QueryBatcherOptions::refresh_every, 1, no_max,
               "Epochs between re-clustering (from the last pass's embeddings)")
      .when("sampler.type=cluster")
      // Each entry doubles C: 30 doublings already exceed any label or query count.
      .integers("sampler.grow_at", &QueryBatcherOptions::grow_at, 0, 1000000, 30, /*allow_empty=*/true, "[3, 6]",
                "Epochs at which the cluster size C doubles")
      .build();
}

}  // namespace xmc
