// Metrics against small cases worked out by hand (DESIGN.md section 4, pyxclib definitions).
#include "engine/eval/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/eval/ranking.h"

namespace xmc {
namespace {

using Labels = std::vector<std::int32_t>;

std::vector<std::int32_t> rank(const Labels& labels, const std::vector<float>& scores, std::size_t k, const Labels& excluded = {}) {
  std::vector<std::int32_t> ranked;
  rank_top_k(labels, scores, k, excluded, ranked);
  return ranked;
}

// Three test rows over L = 6 labels:
//   row 0: truth {0, 2}; scores 0:.9 1:.8 2:.7 3:.1      -> ranking 0 1 2 3   hits 1 0 1 0
//   row 1: truth {}     (counts as zero)
//   row 2: truth {5};   scores 4:.5 5:.5 (tie)           -> ranking 4 5       hits 0 1
struct WorkedExample {
  std::vector<Labels> truth{{0, 2}, {}, {5}};
  std::vector<Labels> ranked;
  explicit WorkedExample(const std::vector<Labels>& filters = {{}, {}, {}}) {
    ranked.push_back(rank({3, 0, 2, 1}, {0.1f, 0.9f, 0.7f, 0.8f}, 10, filters[0]));
    ranked.push_back(rank({1}, {0.3f}, 10, filters[1]));
    ranked.push_back(rank({5, 4}, {0.5f, 0.5f}, 10, filters[2]));
  }
  EvalResult evaluate(EvalOptions options, std::vector<double> inv = {}, std::vector<std::int8_t> bins = {}) const {
    StreamingEvaluator e(std::move(options), 6, std::move(inv), std::move(bins));
    for (std::size_t i = 0; i < truth.size(); ++i) e.add_row(truth[i], ranked[i]);
    return e.result();
  }
};

const double kLog3 = std::log2(3.0), kLog4 = 2.0;

}  // namespace

TEST(Ranking, SortsByScoreThenLowerLabelAndDropsExcluded) {
  EXPECT_EQ(rank({7, 3, 5, 1}, {0.5f, 0.5f, 0.9f, 0.1f}, 10), (Labels{5, 3, 7, 1}));
  EXPECT_EQ(rank({7, 3, 5, 1}, {0.5f, 0.5f, 0.9f, 0.1f}, 2), (Labels{5, 3}));
  EXPECT_EQ(rank({7, 3, 5, 1}, {0.5f, 0.5f, 0.9f, 0.1f}, 2, {5}), (Labels{3, 7}));
  EXPECT_TRUE(rank({}, {}, 5).empty());
}

TEST(Metrics, PrecisionNdcgRecallOnTheWorkedExample) {
  WorkedExample ex;
  ASSERT_EQ(ex.ranked[2], (Labels{4, 5}));  // tie broken by lower label index
  const EvalResult r = ex.evaluate({.ks = {1, 3, 5}});
  EXPECT_EQ(r.rows, 3);
  EXPECT_NEAR(r.get("P@1"), (1.0 + 0 + 0) / 3, 1e-12);
  EXPECT_NEAR(r.get("P@3"), (2.0 / 3 + 0 + 1.0 / 3) / 3, 1e-12);
  // k = 5 is more than the 4 and 2 predictions: missing ranks are misses, still divided by k.
  EXPECT_NEAR(r.get("P@5"), (2.0 / 5 + 0 + 1.0 / 5) / 3, 1e-12);
  const double ndcg3_row0 = (1 + 1 / kLog4) / (1 + 1 / kLog3);  // ideal DCG over min(3, |y|=2) ranks
  const double ndcg3_row2 = (1 / kLog3) / 1.0;
  EXPECT_NEAR(r.get("nDCG@1"), 1.0 / 3, 1e-12);
  EXPECT_NEAR(r.get("nDCG@3"), (ndcg3_row0 + 0 + ndcg3_row2) / 3, 1e-12);
  EXPECT_NEAR(r.get("R@1"), (0.5 + 0 + 0) / 3, 1e-12);
  EXPECT_NEAR(r.get("R@3"), (1.0 + 0 + 1.0) / 3, 1e-12);
  EXPECT_THROW(r.get("PSP@1"), Error);  // no propensities given
}

TEST(Metrics, EmptyRowsCanBeDropped) {
  WorkedExample ex;
  const EvalResult r = ex.evaluate({.ks = {1, 3}, .drop_empty_rows = true});
  EXPECT_EQ(r.rows, 2);
  EXPECT_NEAR(r.get("P@1"), 1.0 / 2, 1e-12);
  EXPECT_NEAR(r.get("P@3"), (2.0 / 3 + 1.0 / 3) / 2, 1e-12);
}

TEST(Metrics, FilteredPairsLeaveThePredictionsBeforeScoring) {
  // Filtering label 1 from row 0 moves label 2 up to rank 2.
  WorkedExample ex({{1}, {}, {}});
  EXPECT_EQ(ex.ranked[0], (Labels{0, 2, 3}));
  const EvalResult r = ex.evaluate({.ks = {1, 3}});
  EXPECT_NEAR(r.get("P@3"), (2.0 / 3 + 0 + 1.0 / 3) / 3, 1e-12);
  EXPECT_NEAR(r.get("nDCG@3"), (1.0 + 0 + 1 / kLog3) / 3, 1e-12);  // row 0 is now ideal
}

TEST(Metrics, PropensityScoredMetricsAreRatiosOfDatasetSums) {
  WorkedExample ex;
  const std::vector<double> inv{1, 2, 3, 4, 5, 6};  // 1/p_l = l + 1
  const EvalResult r = ex.evaluate({.ks = {1, 3}}, inv);
  // PSP@1: predicted hits 1 (row 0: label 0) and 0 (row 2); ideal: best true label per row, 3 and 6.
  EXPECT_NEAR(r.get("PSP@1"), (1.0 + 0) / (3.0 + 6.0), 1e-12);
  // PSP@3: row 0 hits labels 0 and 2 (1 + 3), row 2 hits 5 (6): the same as the ideal sums.
  EXPECT_NEAR(r.get("PSP@3"), 1.0, 1e-12);
  // PSnDCG@3 with z_0 = 1 + 1/log2(3) (two true labels), z_2 = 1.
  const double z0 = 1 + 1 / kLog3;
  const double num = (1.0 / 1 + 3.0 / kLog4) / z0 + (6.0 / kLog3) / 1;
  const double den = (3.0 / 1 + 1.0 / kLog3) / z0 + 6.0 / 1;
  EXPECT_NEAR(r.get("PSnDCG@3"), num / den, 1e-12);
  EXPECT_NEAR(r.get("PSnDCG@1"), (1.0 + 0) / (3.0 + 6.0), 1e-12);
}

TEST(Metrics, IdealRankingScoresOneAndNoRankingScoresMore) {
  // Rows ranked by descending 1/p of their true labels are the ideal ranking: PSP = PSnDCG = 1;
  // P@1 = nDCG = 1 as every top prediction is correct. Any other ranking stays <= 1.
  const std::vector<double> inv{1.5, 4, 2, 8, 3};
  const std::vector<Labels> truth{{0, 1, 3}, {2}, {1, 2, 4}};
  const std::vector<Labels> ideal{{3, 1, 0}, {2}, {1, 4, 2}};
  const std::vector<Labels> other{{0, 2, 1, 3}, {4, 2}, {2, 1, 0, 4}};
  StreamingEvaluator best({.ks = {1, 2, 3, 5}}, 5, inv), worse({.ks = {1, 2, 3, 5}}, 5, inv);
  for (std::size_t i = 0; i < truth.size(); ++i) {
    best.add_row(truth[i], ideal[i]);
    worse.add_row(truth[i], other[i]);
  }
  const auto b = best.result(), w = worse.result();
  for (const char* m : {"PSP@1", "PSP@2", "PSP@3", "PSP@5", "PSnDCG@1", "PSnDCG@3", "PSnDCG@5", "nDCG@5", "P@1", "R@5"})
    EXPECT_NEAR(b.get(m), 1.0, 1e-12) << m;
  for (const auto& [name, value] : w.metrics) {
    EXPECT_LE(value, 1.0 + 1e-12) << name;
    EXPECT_GE(value, 0.0) << name;
  }
  EXPECT_LT(w.get("PSP@1"), 1.0);
}

TEST(Metrics, MergingChunksEqualsOnePass) {
  WorkedExample ex;
  StreamingEvaluator whole({.ks = {1, 3}}, 6, {1, 2, 3, 4, 5, 6}), a({.ks = {1, 3}}, 6, {1, 2, 3, 4, 5, 6}),
      b({.ks = {1, 3}}, 6, {1, 2, 3, 4, 5, 6});
  for (std::size_t i = 0; i < 3; ++i) {
    whole.add_row(ex.truth[i], ex.ranked[i]);
    (i == 0 ? a : b).add_row(ex.truth[i], ex.ranked[i]);
  }
  a.merge(b);
  const auto x = whole.result(), y = a.result();
  ASSERT_EQ(x.metrics.size(), y.metrics.size());
  for (std::size_t i = 0; i < x.metrics.size(); ++i) EXPECT_DOUBLE_EQ(x.metrics[i].second, y.metrics[i].second);
}

TEST(Metrics, BadOptionsNameTheKey) {
  EXPECT_THROW(StreamingEvaluator({.ks = {}}, 3), ConfigError);
  EXPECT_THROW(StreamingEvaluator({.ks = {0}}, 3), ConfigError);
  EXPECT_THROW(StreamingEvaluator({.ks = {1}}, 3, {1.0, 2.0}), ConfigError);
  EXPECT_THROW(StreamingEvaluator({.ks = {1}, .decile_ks = {5}}, 3), ConfigError);
}

// A cut-off far beyond the labels (a typo, or "all of them") scores as its definition says, and costs no more
// than the rankings given: the discount tables grow with the rows, not with k (k = 1e9 took 16 GB before).
TEST(Metrics, ACutOffFarBeyondTheLabelCountScoresByDefinition) {
  const WorkedExample ex;
  const EvalResult r = ex.evaluate({.ks = {1, 1000000000}});
  // Row 0: 2 hits of 4 ranked; row 1: none; row 2: 1 hit. P@k divides by k; R@k counts every hit.
  EXPECT_NEAR(r.get("P@1000000000"), (2.0 + 0 + 1.0) / 1e9 / 3, 1e-18);
  EXPECT_NEAR(r.get("R@1000000000"), (1.0 + 0 + 1.0) / 3, 1e-12);
  // nDCG@k with k past every truth row is the full-ranking nDCG: row 0 hits at ranks 1 and 3, row 2 at rank 2.
  const double row0 = (1.0 + 1.0 / std::log2(4.0)) / (1.0 + 1.0 / std::log2(3.0));
  const double row2 = (1.0 / std::log2(3.0)) / 1.0;
  EXPECT_NEAR(r.get("nDCG@1000000000"), (row0 + 0 + row2) / 3, 1e-12);
  EXPECT_NEAR(r.get("P@1"), 1.0 / 3, 1e-12);
}

}  // namespace xmc
