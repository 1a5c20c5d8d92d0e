#include "engine/sampler/cluster_batch_options.h"

#include <limits>
#include <map>

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"

namespace xmc {

std::int64_t cluster_size_at(const ClusterBatchOptions& options, std::int64_t epoch) {
  std::int64_t c = options.cluster_size;
  for (auto e : options.grow_at)
    if (epoch >= e) c *= 2;
  return c;
}

BatchOrderInfo cluster_batch_order_info() {
  constexpr std::int64_t no_max = std::numeric_limits<std::int64_t>::max();
  return {.name = "cluster",
          .description = "NGAME: balanced 2-means clusters of the last pass's query embeddings, shuffled and cut into batches",
          .option_groups = {OptionGroupBuilder<ClusterBatchOptions>("Clustered batches")
                                .integer("sampler.cluster_size", &ClusterBatchOptions::cluster_size, 1, 1 << 20,
                                         "NGAME cluster size C once clustering starts")
                                .integer("sampler.start_epoch", &ClusterBatchOptions::start_epoch, 0, no_max,
                                         "First clustered epoch (0-based); earlier epochs are random")
                                .integer("sampler.refresh_every", &ClusterBatchOptions::refresh_every, 1, no_max,
                                         "Epochs between re-clustering (from the last pass's embeddings)")
                                // Each entry doubles C: 30 doublings already exceed any label or query count.
                                .integers("sampler.grow_at", &ClusterBatchOptions::grow_at, 0, 1000000, 30, /*allow_empty=*/true,
                                          "[3, 6]", "Epochs at which the cluster size C doubles")
                                .build()},
          .milestones =
              [](const ComponentConfig& config) {
                // Marks on the encoder's epochs only: later stages (NGAME's M4) train with the encoder frozen.
                const ClusterBatchOptions& options = config.get<ClusterBatchOptions>();
                const std::int64_t start = options.start_epoch, end = config.run.epochs;
                std::vector<EpochMark> marks;
                if (start >= end) return marks;
                if (start > 0) marks.push_back({start, "clusters, C = " + std::to_string(cluster_size_at(options, start))});
                for (auto g : options.grow_at)
                  if (g > start && g < end) marks.push_back({g, "C = " + std::to_string(cluster_size_at(options, g))});
                for (const EpochMark& mark : periodic_marks(start + options.refresh_every, options.refresh_every, end, "re-clustered"))
                  marks.push_back(mark);
                return marks;
              }};
}

}  // namespace xmc
