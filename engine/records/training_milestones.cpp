#include "engine/records/training_milestones.h"

#include <algorithm>
#include <map>

#include "engine/config/component_info.h"
#include "engine/sampler/query_batcher_options.h"

namespace xmc {

std::vector<TrainingMilestone> training_milestones(const TrainConfig& config) {
  std::map<std::int64_t, std::vector<std::string>> at;
  // The batch order's marks (re-clustering), then the method's.
  if (const auto& order = batch_order_info(config.get<QueryBatcherOptions>().type); order.milestones)
    for (const EpochMark& mark : order.milestones(config)) at[mark.epoch].push_back(mark.label);
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
