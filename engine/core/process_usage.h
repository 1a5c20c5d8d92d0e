#pragma once
// What this process uses of the machine — CPU time over all its threads, resident memory now and at its peak —
// sampled now and then into a run's scalars ("system/..."), so that a run can be judged by its cost as well
// as its metrics (a memory budget that held, a run that used one core of sixteen). Plain C++ (getrusage and
// /proc/self/statm).
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace xmc {

struct ProcessUsage {
  double cpu_seconds = 0;     ///< user + system CPU time of every thread so far
  double memory_bytes = 0;    ///< resident set now (0 where /proc is missing)
  double peak_memory_bytes = 0;  ///< the largest resident set so far
};

/// This process's usage now.
ProcessUsage process_usage();

/// The scalar keys a run's system use is stored under (a "system/" prefix, engine/records/system_use.h reads them).
inline constexpr const char* kSystemUsePrefix = "system/";

/// Turns samples of process_usage() at most every `interval` apart into scalars: "system/cpu_cores" (CPU
/// seconds per wall second since the previous sample: 2 = two cores busy throughout) with "system/cpu_seconds_span"
/// (the wall seconds that rate covers, its weight in a mean), "system/memory_gb" and "system/peak_memory_gb" (GiB).
class ProcessUsageSampler {
 public:
  explicit ProcessUsageSampler(std::chrono::milliseconds interval = std::chrono::seconds(10));
  /// The scalars (key, value) when `interval` has passed since the last sample (or `force`); empty otherwise.
  /// The first call only starts the clock unless forced (a CPU rate needs two samples; memory is given).
  /// `replacing`: this sample takes the last one's place (stored at the same step), so its CPU rate covers the
  /// time since the sample before that one.
  std::vector<std::pair<std::string, double>> sample(bool force = false, bool replacing = false);

 private:
  std::chrono::milliseconds interval_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_time_, before_last_time_;
  double last_cpu_seconds_ = 0, before_last_cpu_seconds_ = 0;
};

}  // namespace xmc
