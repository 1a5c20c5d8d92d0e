// Splitting stored evaluations by inference mode: NGAME's primary mode is the embedding in M1 and the
// fused ranking from M4, so the plain "P@1" points belong to two different curves.
#include "engine/records/evaluation_modes.h"

#include <gtest/gtest.h>

namespace xmc {
namespace {

// Two M1 evaluations (embedding only) and one M4 evaluation (fused primary; embedding and classifier
// beside it), stored as the trainer stores them: every mode under its prefix and the primary plain.
std::vector<EvalPoint> ngame_like() {
  return {
      {1, 10, "P@1", 0.05}, {1, 10, "emb/P@1", 0.05},                                               // M1
      {2, 20, "P@1", 0.06}, {2, 20, "emb/P@1", 0.06},                                               // M1
      {3, 30, "fused/P@1", 0.15}, {3, 30, "emb/P@1", 0.06}, {3, 30, "clf/P@1", 0.12}, {3, 30, "P@1", 0.15},  // M4
  };
}

std::vector<double> values(const ModeSeries& s) {
  std::vector<double> out;
  for (const EvalPoint& p : s.points) out.push_back(p.value);
  return out;
}

TEST(EvaluationModes, EachModeIsOneSeriesAndThePlainCurveNoLongerJoinsTwoModes) {
  const auto series = series_by_mode(ngame_like());
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series[0].mode, "fused");  // the last evaluation's primary leads
  EXPECT_EQ(values(series[0]), (std::vector<double>{0.15}));
  EXPECT_EQ(series[1].mode, "emb");
  EXPECT_EQ(values(series[1]), (std::vector<double>{0.05, 0.06, 0.06}));  // through M1 and M4
  EXPECT_EQ(series[2].mode, "clf");
  EXPECT_EQ(values(series[2]), (std::vector<double>{0.12}));
  for (const auto& s : series)
    for (const auto& p : s.points) EXPECT_EQ(p.metric, "P@1");  // names without the prefix
  // The embedding was the primary through M1, the fused ranking from M4; the classifier never.
  EXPECT_TRUE(series[0].primary_at_some_evaluation);
  EXPECT_TRUE(series[1].primary_at_some_evaluation);
  EXPECT_FALSE(series[2].primary_at_some_evaluation);
}

TEST(EvaluationModes, TablesDropOnlyThePrimaryCopiesOfEachEvaluation) {
  EXPECT_EQ(final_primary_mode(ngame_like()), "fused");
  std::vector<std::string> kept;
  for (const auto& p : without_primary_copies(ngame_like())) kept.push_back(p.metric);
  EXPECT_EQ(kept, (std::vector<std::string>{"P@1", "P@1", "emb/P@1", "clf/P@1", "P@1"}));
}

TEST(EvaluationModes, AModeThatMatchesOnlySomeMetricsIsNotThePrimary) {
  // clf equals the plain P@1 by chance but not P@5: the primary is fused, which repeats both.
  const std::vector<EvalPoint> points{{1, 5, "P@1", 0.5}, {1, 5, "P@5", 0.2},      {1, 5, "clf/P@1", 0.5},
                                      {1, 5, "clf/P@5", 0.1}, {1, 5, "fused/P@1", 0.5}, {1, 5, "fused/P@5", 0.2}};
  EXPECT_EQ(final_primary_mode(points), "fused");
  EXPECT_EQ(without_primary_copies(points).size(), 4u);
}

TEST(EvaluationModes, RunsStoredBeforeModesWereNamedKeepTheirPlainSeries) {
  // Older runs: the primary only plain, other modes prefixed.
  const std::vector<EvalPoint> points{{1, 5, "P@1", 0.3}, {1, 5, "clf/P@1", 0.2}, {2, 9, "P@1", 0.4}, {2, 9, "clf/P@1", 0.25}};
  const auto series = series_by_mode(points);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].mode, "");
  EXPECT_EQ(values(series[0]), (std::vector<double>{0.3, 0.4}));
  EXPECT_EQ(series[1].mode, "clf");
  EXPECT_EQ(final_primary_mode(points), "");
  EXPECT_EQ(without_primary_copies(points).size(), points.size());
  EXPECT_TRUE(series_by_mode({}).empty());
}

}  // namespace
}  // namespace xmc
