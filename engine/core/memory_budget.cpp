#include "engine/core/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "engine/core/error.h"

namespace xmc {
namespace {

constexpr std::int64_t kMb = std::int64_t{1} << 20;
constexpr std::int64_t kMaxMemoryBudgetMb = std::int64_t{1} << 20;  // 1 TB

/// 0 until set: the default.
std::atomic<std::int64_t> g_budget_mb{0};
std::atomic<bool> g_set_by_run{false};

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace

void require_fits_in_memory(double bytes, const std::string& what) {
  const double physical = physical_memory_bytes();
  if (physical <= 0 || bytes <= physical) return;
  char sizes[96];
  std::snprintf(sizes, sizeof sizes, "%.1f GB, more than this machine's %.1f GB of memory", bytes / double(std::int64_t{1} << 30),
                physical / double(std::int64_t{1} << 30));
  throw Error(what + " would need " + sizes);
}

std::int64_t default_memory_budget_mb() {
  const double physical = physical_memory_bytes();
  if (physical <= 0) return 256;  // unknown: a size any machine that trains has
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(physical / 16.0) / kMb, 64, 512);
}

void set_memory_budget_mb(std::int64_t megabytes) {
  if (megabytes != 0 && (megabytes < kMinMemoryBudgetMb || megabytes > kMaxMemoryBudgetMb))
    throw ConfigError("memory_mb: " + std::to_string(megabytes) + " MB is outside [" + std::to_string(kMinMemoryBudgetMb) + ", " +
                      std::to_string(kMaxMemoryBudgetMb) + "] (0 = from the machine: " + std::to_string(default_memory_budget_mb()) + " MB here)");
  g_budget_mb = megabytes == 0 ? default_memory_budget_mb() : megabytes;
  g_set_by_run = megabytes != 0;
}

std::int64_t memory_budget_bytes() {
  const std::int64_t mb = g_budget_mb.load();
  return (mb > 0 ? mb : default_memory_budget_mb()) * kMb;
}

std::int64_t memory_budget_part(int share) { return memory_budget_bytes() / std::max(1, share); }

std::string describe_memory_budget() {
  const std::string mb = std::to_string(memory_budget_bytes() / kMb) + " MB";
  if (g_set_by_run) return mb + " (memory_mb)";
  char machine[32];
  std::snprintf(machine, sizeof machine, "%.1f GB", physical_memory_bytes() / static_cast<double>(std::int64_t{1} << 30));
  return mb + " (from this machine's " + machine + ")";
}

}  // namespace xmc
