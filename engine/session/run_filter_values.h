#pragma once
// Plain C++. What a filter expression (engine/records/run_filter.h) reads of a stored run, so that the Runs tab and
// `xmc runs list --where` filter alike: its fields, its config under today's key names, its last metrics.
#include <string>
#include <vector>

#include "engine/records/run_filter.h"
#include "engine/records/run_records.h"

namespace xmc {

/// The value `name` has in `run`: id, name, status, method, dataset, tags (", "-joined), notes; a config key's stored
/// value (nothing for a key newer than the run); a metric's last value, the primary mode's or a prefixed mode's, as
/// a fraction (nothing when never evaluated).
FilterValue run_filter_value(const RunInfo& run, const std::vector<EvalPoint>& evaluations, const std::string& name);

/// Whether `run` passes `filter`.
bool run_passes(const RunFilter& filter, const RunInfo& run, const std::vector<EvalPoint>& evaluations);

}  // namespace xmc
