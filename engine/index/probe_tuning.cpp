#include "engine/index/probe_tuning.h"

#include <algorithm>

namespace xmc {

std::int64_t raised_probe(std::int64_t probe, std::int64_t cap) { return std::min(cap, probe + std::max<std::int64_t>(1, probe / 2)); }

std::int64_t lowered_probe(std::int64_t probe) { return std::max<std::int64_t>(1, probe - std::max<std::int64_t>(1, probe / 3)); }

TunedProbe tune_probe(const ProbeTuning& tuning, const std::function<std::vector<double>(std::int64_t probe)>& recall_at) {
  TunedProbe out;
  const auto keeps = [&](std::int64_t probe, std::vector<double>& recalls) {
    ++out.tries;
    recalls = recall_at(probe);
    return std::all_of(recalls.begin(), recalls.end(), [&](double recall) { return recall >= tuning.target; });
  };
  out.probe = std::max<std::int64_t>(1, tuning.first);
  out.reached = keeps(out.probe, out.recall_at_10);
  if (out.reached) {
    std::vector<double> lower;
    while (out.probe > 1 && keeps(lowered_probe(out.probe), lower)) {
      out.probe = lowered_probe(out.probe);
      out.recall_at_10 = lower;
    }
    return out;
  }
  while (out.probe < tuning.max) {
    out.probe = raised_probe(out.probe, tuning.max);
    if ((out.reached = keeps(out.probe, out.recall_at_10))) break;
  }
  return out;
}

}  // namespace xmc
