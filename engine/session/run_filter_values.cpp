#include "engine/session/run_filter_values.h"

#include <cmath>

#include "engine/records/evaluation_modes.h"
#include "engine/session/run_config_view.h"

namespace xmc {
namespace {

/// The value `name` (of `kind`) has in `run`.
FilterValue run_filter_value(const RunInfo& run, const std::vector<EvalPoint>& evaluations, const std::string& name, FilterNameKind kind) {
  if (name == "id") return static_cast<double>(run.id);
  if (name == "name") return run.name;
  if (name == "status") return to_string(run.status);
  if (name == "dataset") return run.dataset_path;
  if (name == "notes") return run.notes;
  if (name == "tags") {
    std::string joined;
    for (const std::string& tag : run.tags) joined += (joined.empty() ? "" : ", ") + tag;
    return joined;
  }
  const std::shared_ptr<const FlatConfig> config = flat_run_config(run.config_json);
  if (const auto it = config->find(name); it != config->end()) return filter_value_from_text(kind, it->second);
  if (kind != FilterNameKind::number) return {};
  const double value = final_value(evaluations, name);
  return std::isnan(value) ? FilterValue{} : FilterValue{value};
}

}  // namespace

bool run_passes(const RunFilter& filter, const RunInfo& run, const std::vector<EvalPoint>& evaluations) {
  return filter.matches([&](const std::string& name, FilterNameKind kind) { return run_filter_value(run, evaluations, name, kind); });
}

}  // namespace xmc
