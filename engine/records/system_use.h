#pragma once
// A run's use of the machine, summarised from the "system/..." scalars its training process sampled
// (engine/core/process_usage.h): the peak resident memory and the CPU cores kept busy on average. Shown in the
// Runs table's columns, `xmc runs show` and the report; the Live tab's loss plot draws the samples.
#include <optional>
#include <string>
#include <vector>

#include "engine/records/run_records.h"

namespace xmc {

struct SystemUse {
  std::optional<double> peak_memory_gb;  ///< the largest resident set of the training process, GiB
  std::optional<double> mean_cpu_cores;  ///< CPU seconds per wall second over the sampled time
  std::optional<double> max_cpu_cores;   ///< the busiest sampled interval
  std::size_t samples = 0;               ///< CPU samples behind the means
};

/// From a run's scalars (others ignored). The CPU mean weighs each sample by the wall seconds it covers (its
/// "system/cpu_seconds_span"; in runs that did not store one, the time since the previous sample): a sample at an
/// epoch's end may cover a second, a periodic one ten, the first after a resume only its own process's time.
SystemUse summarize_system_use(const std::vector<ScalarPoint>& scalars);

/// "peak memory 1.23 GB, 1.9 CPU cores busy on average (2.0 at most)"; "" when nothing was sampled.
std::string system_use_text(const SystemUse& use);

}  // namespace xmc
