// One probe tuning for evaluations and shortlists: the sequences it tries are worked by hand from the rule (raise
// by half, at least one; lower by a third, at least one), on recall curves given as tables.
#include <gtest/gtest.h>

#include <map>

#include "engine/index/probe_tuning.h"

namespace xmc {
namespace {

/// A recall curve for one mode: each probe's recall is that of the largest tabled probe at or below it.
std::vector<double> recall_from(const std::map<std::int64_t, double>& table, std::int64_t probe) {
  auto it = table.upper_bound(probe);
  return {it == table.begin() ? 0.0 : std::prev(it)->second};
}

TEST(ProbeTuning, RaisesByHalfUntilTheTargetIsKept) {
  std::vector<std::int64_t> tried;
  const TunedProbe tuned = tune_probe({.first = 4, .max = 100, .target = 0.9}, [&](std::int64_t probe) {
    tried.push_back(probe);
    return recall_from({{1, 0.5}, {12, 0.91}}, probe);
  });
  EXPECT_EQ(tried, (std::vector<std::int64_t>{4, 6, 9, 13}));  // 12 is never tried: 9 + 4 = 13
  EXPECT_EQ(tuned.probe, 13);
  EXPECT_TRUE(tuned.reached);
  EXPECT_EQ(tuned.recall_at_10, std::vector<double>{0.91});
  EXPECT_EQ(tuned.tries, 4);
}

TEST(ProbeTuning, StopsAtItsCapWithTheRecallItGot) {
  std::vector<std::int64_t> tried;
  const TunedProbe tuned = tune_probe({.first = 4, .max = 20, .target = 0.9}, [&](std::int64_t probe) {
    tried.push_back(probe);
    return recall_from({{1, 0.5}, {16, 0.8}}, probe);
  });
  EXPECT_EQ(tried, (std::vector<std::int64_t>{4, 6, 9, 13, 19, 20}));  // 19 + 9 is cut to the cap
  EXPECT_EQ(tuned.probe, 20);
  EXPECT_FALSE(tuned.reached);
  EXPECT_EQ(tuned.recall_at_10, std::vector<double>{0.8});
}

TEST(ProbeTuning, LowersAProbeThatKeepsTheTargetWhileItStillDoes) {
  std::vector<std::int64_t> tried;
  const TunedProbe tuned = tune_probe({.first = 40, .max = 100, .target = 0.9}, [&](std::int64_t probe) {
    tried.push_back(probe);
    return recall_from({{1, 0.3}, {10, 0.92}, {30, 0.99}}, probe);
  });
  // 40 keeps it, 27 (40 - 13) and 18 (27 - 9) and 12 (18 - 6) too; 8 (12 - 4) does not.
  EXPECT_EQ(tried, (std::vector<std::int64_t>{40, 27, 18, 12, 8}));
  EXPECT_EQ(tuned.probe, 12);
  EXPECT_TRUE(tuned.reached);
  EXPECT_EQ(tuned.recall_at_10, std::vector<double>{0.92}) << "the recall of the probe kept, not of the last one tried";
}

TEST(ProbeTuning, EveryModeMustKeepTheTarget) {
  const TunedProbe tuned = tune_probe({.first = 2, .max = 64, .target = 0.9}, [](std::int64_t probe) {
    return std::vector<double>{probe >= 2 ? 0.95 : 0.1, probe >= 6 ? 0.93 : 0.4};
  });
  EXPECT_EQ(tuned.probe, 6);  // 2, 3, 4, 6
  EXPECT_EQ(tuned.tries, 4);
  EXPECT_EQ(lowered_probe(1), 1);
  EXPECT_EQ(lowered_probe(2), 1);
  EXPECT_EQ(raised_probe(1, 100), 2);
  EXPECT_EQ(raised_probe(64, 80), 80);
}

}  // namespace
}  // namespace xmc
