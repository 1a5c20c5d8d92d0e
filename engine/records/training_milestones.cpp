#include "engine/records/training_milestones.h"

#include <algorithm>
#include <map>

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/sampler/query_batcher_options.h"

namespace xmc {

bool takes_tsne_snapshots(const TrainConfig& config) {
  const auto& method = method_info(config.method);
  return config.tsne_every > 0 && method.trains_encoder && !method.base_run;
}

std::vector<TrainingMilestone> training_milestones(const TrainConfig& config) {
  std::map<std::int64_t, std::vector<std::string>> at;
  // The batch order's marks (re-clustering) where the method trains its own encoder on query batches (not
  // IRENE, which builds on a finished run, nor xrlinear: their configs' batch order is never used), then the
  // method's.
  const auto& method = method_info(config.method);
  const ComponentConfig components = component_config(config);
  if (const auto& order = batch_order_info(config.get<QueryBatcherOptions>().type); order.milestones && method.trains_encoder && !method.base_run)
    for (const EpochMark& mark : order.milestones(components)) at[mark.epoch].push_back(mark.label);
  // The method's own marks: its shortlist refreshes, its later stages (NGAME's M4).
  if (method.milestones)
    for (const EpochMark& mark : method.milestones(components)) at[mark.epoch].push_back(mark.label);

  std::vector<TrainingMilestone> out;
  for (auto& [epoch, labels] : at) {
    std::string joined;
    for (const auto& l : labels) joined += (joined.empty() ? "" : ", ") + l;
    out.push_back({static_cast<double>(epoch), joined});
  }
  return out;
}

}  // namespace xmc
