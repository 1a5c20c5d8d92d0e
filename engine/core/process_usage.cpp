#include "engine/core/process_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace xmc {

ProcessUsage process_usage() {
  ProcessUsage usage;
  rusage r{};
  if (::getrusage(RUSAGE_SELF, &r) == 0) {
    usage.cpu_seconds = static_cast<double>(r.ru_utime.tv_sec) + static_cast<double>(r.ru_utime.tv_usec) * 1e-6 +
                        static_cast<double>(r.ru_stime.tv_sec) + static_cast<double>(r.ru_stime.tv_usec) * 1e-6;
    usage.peak_memory_bytes = static_cast<double>(r.ru_maxrss) * 1024.0;  // Linux reports KiB
  }
  // statm's second field: resident pages.
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long long size = 0, resident = 0;
    if (std::fscanf(f, "%llu %llu", &size, &resident) == 2)
      usage.memory_bytes = static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  if (usage.memory_bytes > usage.peak_memory_bytes) usage.peak_memory_bytes = usage.memory_bytes;
  return usage;
}

ProcessUsageSampler::ProcessUsageSampler(std::chrono::milliseconds interval) : interval_(interval) {}

std::vector<std::pair<std::string, double>> ProcessUsageSampler::sample(bool force, bool replacing) {
  const auto now = std::chrono::steady_clock::now();
  if (started_ && !force && now - last_time_ < interval_) return {};
  const ProcessUsage usage = process_usage();
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::vector<std::pair<std::string, double>> out;
  const std::string prefix = kSystemUsePrefix;
  if (started_ && replacing) {  // measured from where the replaced sample was
    last_time_ = before_last_time_;
    last_cpu_seconds_ = before_last_cpu_seconds_;
  }
  const double wall = std::chrono::duration<double>(now - last_time_).count();
  if (started_ && wall > 0) {
    out.emplace_back(prefix + "cpu_cores", (usage.cpu_seconds - last_cpu_seconds_) / wall);
    out.emplace_back(prefix + "cpu_seconds_span", wall);
  }
  if (started_ || force) {
    out.emplace_back(prefix + "memory_gb", usage.memory_bytes / kGiB);
    out.emplace_back(prefix + "peak_memory_gb", usage.peak_memory_bytes / kGiB);
  }
  before_last_time_ = started_ ? last_time_ : now;
  before_last_cpu_seconds_ = started_ ? last_cpu_seconds_ : usage.cpu_seconds;
  started_ = true;
  last_time_ = now;
  last_cpu_seconds_ = usage.cpu_seconds;
  return out;
}

}  // namespace xmc
