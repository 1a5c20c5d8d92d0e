#include "engine/records/system_use.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "engine/core/process_usage.h"

namespace xmc {

SystemUse summarize_system_use(const std::vector<ScalarPoint>& scalars) {
  const std::string peak_key = std::string(kSystemUsePrefix) + "peak_memory_gb";
  const std::string cpu_key = std::string(kSystemUsePrefix) + "cpu_cores";
  const std::string span_key = std::string(kSystemUsePrefix) + "cpu_seconds_span";
  // The wall seconds each step's CPU rate covers, where stored; else the time since the previous rate.
  std::map<std::int64_t, double> spans;
  for (const ScalarPoint& p : scalars)
    if (p.key == span_key && std::isfinite(p.value) && p.value > 0) spans[p.step] = p.value;
  SystemUse use;
  double weighted = 0, weights = 0, previous_wall = std::nan(""), first_rate = std::nan("");
  for (const ScalarPoint& p : scalars) {
    if (!std::isfinite(p.value)) continue;
    if (p.key == peak_key) {
      use.peak_memory_gb = std::max(use.peak_memory_gb.value_or(0.0), p.value);
    } else if (p.key == cpu_key) {
      ++use.samples;
      use.max_cpu_cores = std::max(use.max_cpu_cores.value_or(0.0), p.value);
      const auto span = spans.find(p.step);
      const double since = span != spans.end() ? span->second : p.wall_time - previous_wall;
      if (std::isfinite(since) && since > 0) {
        weighted += p.value * since;
        weights += since;
      } else if (!std::isfinite(first_rate)) {
        first_rate = p.value;  // the first sample: how long it covers is not stored
      }
      previous_wall = p.wall_time;
    }
  }
  if (weights > 0) use.mean_cpu_cores = weighted / weights;
  else if (std::isfinite(first_rate)) use.mean_cpu_cores = first_rate;
  return use;
}

std::string system_use_text(const SystemUse& use) {
  std::string out;
  char text[96];
  if (use.peak_memory_gb) {
    std::snprintf(text, sizeof text, "peak memory %.2f GB", *use.peak_memory_gb);
    out += text;
  }
  if (use.mean_cpu_cores) {
    std::snprintf(text, sizeof text, "%s%.1f CPU cores busy on average (%.1f at most)", out.empty() ? "" : ", ", *use.mean_cpu_cores,
                  use.max_cpu_cores.value_or(*use.mean_cpu_cores));
    out += text;
  }
  return out;
}

}  // namespace xmc
