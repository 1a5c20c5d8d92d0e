#include "engine/records/training_milestones.h"

#include <algorithm>
#include <map>

#include "engine/config/component_info.h"
#include "engine/sampler/query_batcher_options.h"

namespace xmc {

std::vector<TrainingMilestone> training_milestones(const TrainConfig& config) {
  std::map<std::int64_t, std::vector<std::string>> at;
  const std::int64_t encoder_epochs = config.epochs;  // later stages (NGAME's M4) come after these, with the encoder frozen
  if (config.get<QueryBatcherOptions>().type == "cluster" && config.get<QueryBatcherOptions>().start_epoch < encoder_epochs) {
    auto cluster_size = [&](std::int64_t epoch) {
      std::int64_t c = config.get<QueryBatcherOptions>().cluster_size;
      for (auto g : config.get<QueryBatcherOptions>().grow_at)
        if (epoch >= g) c *= 2;
      return c;
    };
    const std::int64_t start = config.get<QueryBatcherOptions>().start_epoch;
    if (start > 0) at[start].push_back("clusters, C = " + std::to_string(cluster_size(start)));
    for (auto g : config.get<QueryBatcherOptions>().grow_at)
      if (g > start && g < encoder_epochs) at[g].push_back("C = " + std::to_string(cluster_size(g)));
    const std::int64_t refresh = config.get<QueryBatcherOptions>().refresh_every;
    for (const EpochMark& mark : periodic_marks(start + refresh, refresh, encoder_epochs, "re-clustered")) at[mark.epoch].push_back(mark.label);
  }
  // The method's own marks: its shortlist refreshes, its later stages (NGAME's M4).
  if (const auto& method = method_info(config.method); method.milestones)
    for (const EpochMark& mark : method.milestones(config)) at[mark.epoch].push_back(mark.label);

  std::vector<TrainingMilestone> out;
  for (auto& [epoch, labels] : at) {
    std::string joined;
    for (const auto& l : labels) joined += (joined.empty() ? "" : ", ") + l;
    out.push_back({static_cast<double>(epoch), joined});
  }
  return out;
}

}  // namespace xmc
