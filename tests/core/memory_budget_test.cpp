// The process's memory budget for large temporaries: its default from the machine, what a run sets, refusals.
#include "engine/core/memory_budget.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "engine/core/error.h"

namespace xmc {
namespace {

/// MemTotal of /proc/meminfo in MB (the kernel's count, read independently of sysconf).
std::int64_t meminfo_total_mb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb / 1024;
  return 0;
}

/// Leaves the process at its default budget whatever a test set.
struct BudgetReset {
  ~BudgetReset() { set_memory_budget_mb(0); }
};

TEST(MemoryBudget, DefaultsToASixteenthOfTheMachineBetween64And512Mb) {
  BudgetReset reset;
  set_memory_budget_mb(0);
  const std::int64_t total = meminfo_total_mb();
  ASSERT_GT(total, 0);
  const std::int64_t expected = total >= 16 * 512 ? 512 : std::max<std::int64_t>(64, total / 16);
  EXPECT_NEAR(static_cast<double>(default_memory_budget_mb()), static_cast<double>(expected), 1.0);
  EXPECT_EQ(memory_budget_bytes(), default_memory_budget_mb() << 20);
  EXPECT_NE(describe_memory_budget().find("from this machine's"), std::string::npos) << describe_memory_budget();
}

TEST(MemoryBudget, ARunsBudgetIsSharedOutByTheTemporariesShares) {
  BudgetReset reset;
  set_memory_budget_mb(64);
  EXPECT_EQ(memory_budget_bytes(), 64 << 20);
  EXPECT_EQ(memory_budget_part(memory_share::kExactSearchScores), 4 << 20);     // 64 MB / 16
  EXPECT_EQ(memory_budget_part(memory_share::kClusteredSearchScores), 16 << 20);  // 64 MB / 4
  EXPECT_EQ(describe_memory_budget(), "64 MB (memory_mb)");
  set_memory_budget_mb(0);
  EXPECT_EQ(memory_budget_bytes(), default_memory_budget_mb() << 20) << "0 goes back to the machine's default";
}

TEST(MemoryBudget, TooLittleOrTooMuchIsRefusedByName) {
  BudgetReset reset;
  set_memory_budget_mb(100);
  for (const std::int64_t mb : {std::int64_t{1}, std::int64_t{31}, std::int64_t{-5}, std::int64_t{1} << 21}) {
    try {
      set_memory_budget_mb(mb);
      ADD_FAILURE() << mb << " MB was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("memory_mb: " + std::to_string(mb) + " MB is outside [32, 1048576]", 0), 0u) << e.what();
    }
  }
  EXPECT_EQ(memory_budget_bytes(), 100 << 20) << "a refused value leaves the budget as it was";
}

TEST(MemoryBudget, AnAllocationLargerThanTheMachineIsNamedBeforeItIsTried) {
  EXPECT_NO_THROW(require_fits_in_memory(1 << 20, "a megabyte"));
  try {
    require_fits_in_memory(1e18, "the per-label frequencies of 2147483647 labels");
    FAIL() << "an exabyte fitted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("the per-label frequencies of 2147483647 labels would need ", 0), 0u) << message;
    EXPECT_NE(message.find("GB, more than this machine's "), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace xmc
