// A run's use of the machine, summarised from its sampled scalars.
#include "engine/records/system_use.h"

#include <gtest/gtest.h>

namespace xmc {
namespace {

TEST(SystemUse, PeakMemoryAndTimeWeightedCpu) {
  // CPU samples at wall 100 (the first: its span unknown), 110 (2 cores for 10 s), 111 (an epoch's end: 4 cores
  // for 1 s) and 131 (1 core for 20 s): (2·10 + 4·1 + 1·20) / 31 = 44/31 cores.
  const std::vector<ScalarPoint> scalars = {
      {1, 0.1, "system/cpu_cores", 3.0, 100}, {1, 0.1, "system/peak_memory_gb", 1.5, 100}, {1, 0.1, "loss", 9.0, 100},
      {2, 0.2, "system/cpu_cores", 2.0, 110}, {2, 0.2, "system/peak_memory_gb", 2.25, 110}, {2, 0.2, "system/memory_gb", 2.0, 110},
      {3, 1.0, "system/cpu_cores", 4.0, 111}, {4, 1.5, "system/cpu_cores", 1.0, 131}, {4, 1.5, "system/peak_memory_gb", 2.0, 131},
  };
  const SystemUse use = summarize_system_use(scalars);
  ASSERT_TRUE(use.peak_memory_gb && use.mean_cpu_cores && use.max_cpu_cores);
  EXPECT_DOUBLE_EQ(*use.peak_memory_gb, 2.25);
  EXPECT_DOUBLE_EQ(*use.mean_cpu_cores, 44.0 / 31.0);
  EXPECT_DOUBLE_EQ(*use.max_cpu_cores, 4.0);
  EXPECT_EQ(use.samples, 4u);
  EXPECT_EQ(system_use_text(use), "peak memory 2.25 GB, 1.4 CPU cores busy on average (4.0 at most)");
}

TEST(SystemUse, StoredSpansWeighTheMeanAcrossAResume) {
  // 2 cores for 10 s, then the run waited a day to be resumed, then 1 core for 30 s: (2·10 + 1·30) / 40 = 1.25,
  // not a day's weight for the second sample.
  const std::vector<ScalarPoint> scalars = {
      {5, 1.0, "system/cpu_cores", 2.0, 1000}, {5, 1.0, "system/cpu_seconds_span", 10, 1000},
      {9, 2.0, "system/cpu_cores", 1.0, 1000 + 86400 + 30}, {9, 2.0, "system/cpu_seconds_span", 30, 1000 + 86400 + 30}};
  EXPECT_DOUBLE_EQ(summarize_system_use(scalars).mean_cpu_cores.value_or(0), 1.25);
}

TEST(SystemUse, ARunNeverSampledSaysNothing) {
  const SystemUse none = summarize_system_use({{1, 0.1, "loss", 1.0, 1.0}});
  EXPECT_FALSE(none.peak_memory_gb || none.mean_cpu_cores);
  EXPECT_EQ(system_use_text(none), "");
  // One CPU sample: its rate is the mean.
  const SystemUse one = summarize_system_use({{1, 0.1, "system/cpu_cores", 1.5, 7.0}});
  EXPECT_DOUBLE_EQ(one.mean_cpu_cores.value_or(0), 1.5);
  EXPECT_EQ(system_use_text(one), "1.5 CPU cores busy on average (1.5 at most)");
}

}  // namespace
}  // namespace xmc
