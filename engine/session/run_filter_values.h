#pragma once
// Plain C++. What a filter expression (engine/records/run_filter.h) reads of a stored run, so that the Runs tab and
// `xmc runs list --where` filter alike: its fields, its config under today's key names, its last metrics.
#include <string>
#include <vector>

#include "engine/records/run_filter.h"
#include "engine/records/run_records.h"

namespace xmc {

/// Whether `run` passes `filter`, reading its fields (id, name, status, method, dataset, tags ", "-joined, notes), a
/// config key's stored value (nothing for a key newer than the run) and a metric's last value in `evaluations`, the
/// primary mode's or a prefixed mode's, as a fraction (nothing when never evaluated).
bool run_passes(const RunFilter& filter, const RunInfo& run, const std::vector<EvalPoint>& evaluations);

}  // namespace xmc
