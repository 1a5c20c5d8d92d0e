#include "engine/train/training_milestones.h"

#include <algorithm>
#include <map>

namespace xmc {
namespace {

constexpr std::int64_t kMaxRefreshMarks = 20;  // more than this and the lines hide the curves

/// Adds a mark at the start of each epoch first, first + every, ... below `end` (not at 0: the axis begins there).
void every(std::map<std::int64_t, std::vector<std::string>>& at, std::int64_t first, std::int64_t step, std::int64_t end,
           const std::string& label) {
  if (step <= 1 || (end - first) / step > kMaxRefreshMarks) return;
  for (std::int64_t e = first; e < end; e += step)
    if (e > 0) at[e].push_back(label);
}

}  // namespace

std::vector<TrainingMilestone> training_milestones(const TrainConfig& config) {
  std::map<std::int64_t, std::vector<std::string>> at;
  const std::int64_t encoder_epochs = config.epochs;  // NGAME's M4 comes after these, with the encoder frozen
  if (config.sampler_type == "cluster" && config.sampler_start_epoch < encoder_epochs) {
    auto cluster_size = [&](std::int64_t epoch) {
      std::int64_t c = config.cluster_size;
      for (auto g : config.sampler_grow_at)
        if (epoch >= g) c *= 2;
      return c;
    };
    const std::int64_t start = config.sampler_start_epoch;
    if (start > 0) at[start].push_back("clusters, C = " + std::to_string(cluster_size(start)));
    for (auto g : config.sampler_grow_at)
      if (g > start && g < encoder_epochs) at[g].push_back("C = " + std::to_string(cluster_size(g)));
    every(at, start + config.sampler_refresh_every, config.sampler_refresh_every, encoder_epochs, "re-clustered");
  }
  if (config.negatives == "hard") {
    const bool psl = config.method == "unidec" || config.method == "depsl";
    const std::int64_t refresh = psl ? config.psl_refresh_every : config.shortlist_refresh_every;
    every(at, refresh, refresh, encoder_epochs, "shortlists");
  }
  if (config.method == "ngame" && config.ngame_m4_epochs > 0) at[encoder_epochs].push_back("M4: classifiers");

  std::vector<TrainingMilestone> out;
  for (auto& [epoch, labels] : at) {
    std::string joined;
    for (const auto& l : labels) joined += (joined.empty() ? "" : ", ") + l;
    out.push_back({static_cast<double>(epoch), joined});
  }
  return out;
}

}  // namespace xmc
