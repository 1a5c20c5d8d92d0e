// The process's CPU and memory use, as a training run samples it.
#include "engine/core/process_usage.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

namespace xmc {
namespace {

std::map<std::string, double> as_map(const std::vector<std::pair<std::string, double>>& sample) { return {sample.begin(), sample.end()}; }

// Busy on one thread until the process has used `seconds` more of CPU time (however long a loaded machine takes).
double spin(double seconds) {
  volatile double x = 0;
  const double until = process_usage().cpu_seconds + seconds;
  while (process_usage().cpu_seconds < until)
    for (int i = 0; i < 20000; ++i) x = x + std::sqrt(static_cast<double>(i));
  return x;
}

TEST(ProcessUsage, MemoryFollowsWhatIsTouched) {
  const ProcessUsage before = process_usage();
  EXPECT_GT(before.memory_bytes, 0);
  EXPECT_GE(before.peak_memory_bytes, before.memory_bytes);
  constexpr std::size_t kBytes = 256u << 20;  // 256 MiB, every page written
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);
  const ProcessUsage after = process_usage();
  EXPECT_GE(after.memory_bytes - before.memory_bytes, 0.9 * kBytes);
  EXPECT_GE(after.peak_memory_bytes, after.memory_bytes);
  EXPECT_EQ(block[kBytes - 1], 1);
}

TEST(ProcessUsageSampler, FirstCallStartsTheClockThenSamplesWhenDue) {
  ProcessUsageSampler hourly(std::chrono::hours(1));
  EXPECT_TRUE(hourly.sample().empty());  // nothing to rate yet
  EXPECT_TRUE(hourly.sample().empty());  // not due
  ProcessUsageSampler sampler(std::chrono::milliseconds(1));
  EXPECT_TRUE(sampler.sample().empty());
  spin(0.3);
  const auto due = as_map(sampler.sample());
  ASSERT_EQ(due.size(), 4u);
  // One thread spun 0.3 s of CPU: its rate is that over the wall time it took, so at most about one core and
  // more than nothing however loaded the machine; the span is that wall time.
  const double cores = due.at("system/cpu_cores"), span = due.at("system/cpu_seconds_span");
  EXPECT_GT(cores, 0.0);
  EXPECT_LT(cores, 1.5);
  EXPECT_GE(span, 0.3 - 1e-3);
  EXPECT_NEAR(cores * span, 0.3, 0.15);  // the CPU seconds spun, and a little of the test's own
  EXPECT_GT(due.at("system/memory_gb"), 0);
  EXPECT_GE(due.at("system/peak_memory_gb"), due.at("system/memory_gb"));
  // Idle: far below one core.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_LT(as_map(sampler.sample()).at("system/cpu_cores"), 0.2);
  // A sample replacing the last one (same step) spans both intervals: 250 ms idle and the time since.
  spin(0.1);
  const auto replacing = as_map(sampler.sample(true, /*replacing=*/true));
  EXPECT_GE(replacing.at("system/cpu_seconds_span"), 0.25 + 0.1 - 1e-3);
  // Forced: a sample whenever asked (an epoch's end), even the first.
  ProcessUsageSampler forced(std::chrono::hours(1));
  const auto first = as_map(forced.sample(true));
  EXPECT_EQ(first.count("system/cpu_cores"), 0u);
  EXPECT_EQ(first.count("system/memory_gb"), 1u);
  EXPECT_EQ(as_map(forced.sample(true)).count("system/cpu_cores"), 1u);
}

}  // namespace
}  // namespace xmc
