// Shared-candidate evaluation (engine/train/shared_candidate_evaluation.h): modes ranking the same labels from
// the union of their proposing indexes' candidates. Every expectation is worked by hand below.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/train/shared_candidate_evaluation.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

TEST(RankCandidates, RanksEachDistinctCandidateByItsScoreAndReadsAColumnBlockInPlace) {
  // Labels (1, 0), (0, 1), (1, 1), (-1, 0) as columns 1-2 of a wider matrix (column 0 is never read).
  const torch::Tensor wide = torch::tensor({{9.f, 1.f, 0.f}, {9.f, 0.f, 1.f}, {9.f, 1.f, 1.f}, {9.f, -1.f, 0.f}});
  const torch::Tensor labels = wide.narrow(1, 1, 2);
  // Query (2, 1) scores the labels 2, 1, 3, -2; query (0, 1) scores label 3 at 0.
  const torch::Tensor queries = torch::tensor({{2.f, 1.f}, {0.f, 1.f}});
  const torch::Tensor candidates = torch::tensor({{1, 2, 2, -1, 0}, {3, 3, -1, -1, -1}}, torch::kInt64);
  const RankedPredictions ranked = rank_candidates(queries, labels, candidates, 4);
  // Row 0: label 2 once though proposed twice, then 0 and 1; label 3 was not a candidate. Row 1: label 3 once.
  const std::vector<std::int64_t> want_ids{2, 0, 1, -1, 3, -1, -1, -1};
  const std::vector<float> want_scores{3, 2, 1, -std::numeric_limits<float>::infinity(), 0};
  const torch::Tensor ids = ranked.labels.contiguous(), scores = ranked.scores.contiguous();
  for (std::size_t i = 0; i < want_ids.size(); ++i) EXPECT_EQ(ids.data_ptr<std::int64_t>()[i], want_ids[i]) << "entry " << i;
  for (std::size_t i = 0; i < want_scores.size(); ++i) EXPECT_FLOAT_EQ(scores.data_ptr<float>()[i], want_scores[i]) << "entry " << i;
}

/// 128 labels in two blocks of two columns. De block: labels 0-63 at (1 + i/100, 0), labels 64-127 at
/// (0, b·(1 + (i-64)/100)) for b = `de_scale_b` (1 or 3): an inverted file of 64 labels a cluster makes the two
/// groups its clusters. Clf block: even labels at (1, 0), odd label i at (0, 3·(1 + i/100)): clusters even and odd.
struct TwoBlocks {
  explicit TwoBlocks(double de_scale_b) : joint(torch::zeros({128, 4})) {
    for (std::int64_t i = 0; i < 128; ++i) {
      if (i < 64) joint[i][0] = 1 + static_cast<double>(i) / 100;
      else joint[i][1] = de_scale_b * (1 + static_cast<double>(i - 64) / 100);
      if (i % 2 == 0) joint[i][2] = 1;
      else joint[i][3] = 3 * (1 + static_cast<double>(i) / 100);
    }
  }
  torch::Tensor de() const { return joint.narrow(1, 0, 2); }
  torch::Tensor clf() const { return joint.narrow(1, 2, 2); }
  torch::Tensor joint;
};

std::vector<EvalResult> evaluate_three_modes(const TwoBlocks& labels, const torch::Tensor& de_query, const torch::Tensor& clf_query, std::int64_t n,
                                             const CsrMatrix& truth) {
  EvaluationSetup setup;
  setup.truth = &truth;
  setup.ks = {1};
  setup.top = 10;
  setup.index = "ivf:probe=1,size=64";
  setup.recall_target = 0.95;
  // Modes concat, de, clf; de and clf propose.
  SharedCandidateEvaluation evaluation({labels.joint, labels.de(), labels.clf()}, {1, 2}, setup);
  const torch::Tensor de = de_query.unsqueeze(0).expand({n, 2}).contiguous(), clf = clf_query.unsqueeze(0).expand({n, 2}).contiguous();
  evaluation.add({torch::cat({de, clf}, 1), de, clf}, 0);
  return evaluation.results();
}

TEST(CalibrateProbe, TunesUntilEveryModeKeepsTheTargetOrHalfTheClustersWouldBeScanned) {
  // Two modes; recalls by probe, worked by hand: below 8 the second mode misses 0.9, from 8 both keep it. From 4 the
  // probe is raised by half (4, 6, 9); 9 keeps it, and the indexes are left at 9.
  std::vector<std::int64_t> tried;
  std::int64_t used = 0;
  const ProbeCalibration reached = calibrate_probe(
      4, 40, 500, 0.9,
      [&](std::int64_t probe) { used = probe; },
      [&] {
        tried.push_back(used);
        return used < 8 ? std::vector<double>{0.95, 0.5} : std::vector<double>{0.92, 0.96};
      });
  EXPECT_EQ(tried, (std::vector<std::int64_t>{4, 6, 9}));
  EXPECT_EQ(reached.probe, 9);
  EXPECT_EQ(used, 9);
  EXPECT_FALSE(reached.fell_back_to_exact);
  EvalResult second;
  reached.write_to(second, 1);
  EXPECT_EQ(second.search_probe, 9);
  EXPECT_EQ(second.search_clusters, 40);
  EXPECT_EQ(second.calibration_queries, 500);
  EXPECT_DOUBLE_EQ(second.calibration_recall_at_10, 0.96);
  EXPECT_FALSE(second.search_fell_back_to_exact);
  // Never reached with 40 clusters: 4, 6, 9, 13, 19, 20 are tried (no more than 20 of them), then exact search.
  tried.clear();
  const ProbeCalibration missed = calibrate_probe(
      4, 40, 500, 0.9,
      [&](std::int64_t probe) { used = probe; },
      [&] {
        tried.push_back(used);
        return std::vector<double>{0.99, 0.8};
      });
  EXPECT_EQ(tried, (std::vector<std::int64_t>{4, 6, 9, 13, 19, 20}));
  EXPECT_EQ(missed.probe, 20);
  EXPECT_TRUE(missed.fell_back_to_exact);
  EvalResult first;
  missed.write_to(first, 0);
  EXPECT_TRUE(first.search_fell_back_to_exact);
  EXPECT_DOUBLE_EQ(first.calibration_recall_at_10, 0.99);
  // A first probe that keeps the target is lowered while it still does (16, 11, 8), and the indexes use the last kept.
  tried.clear();
  const ProbeCalibration lowered = calibrate_probe(
      16, 40, 500, 0.9,
      [&](std::int64_t probe) { used = probe; },
      [&] {
        tried.push_back(used);
        return used >= 10 ? std::vector<double>{0.97, 0.95} : std::vector<double>{0.97, 0.7};
      });
  EXPECT_EQ(tried, (std::vector<std::int64_t>{16, 11, 8}));
  EXPECT_EQ(lowered.probe, 11);
  EXPECT_EQ(used, 11);
  EXPECT_FALSE(lowered.fell_back_to_exact);
  // Not calibrated: the fields a result has when its search was used as specified.
  EvalResult untouched;
  ProbeCalibration{}.write_to(untouched);
  EXPECT_EQ(untouched.calibration_queries, 0);
  EXPECT_DOUBLE_EQ(untouched.calibration_recall_at_10, -1);
}

TEST(EvenlySpacedRows, TakesRowsIEveryNOverRowsAsFloat) {
  const torch::Tensor queries = torch::arange(10, torch::kDouble).unsqueeze(1).repeat({1, 2});
  const torch::Tensor picked = evenly_spaced_rows(queries, 4);  // rows 0, 2 (10/4 = 2.5), 5, 7 (7.5)
  ASSERT_EQ(picked.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(picked.select(1, 0), torch::tensor({0.f, 2.f, 5.f, 7.f})));
  EXPECT_EQ(evenly_spaced_rows(queries, 50).size(0), 10);  // never more rows than there are
}

TEST(SharedCandidateEvaluation, EachModeRanksTheUnionOfTheProposingIndexesCandidates) {
  const std::int64_t n = 20;
  const CsrMatrix truth = csr_from_rows(std::vector<std::vector<std::int32_t>>(n, std::vector<std::int32_t>{127}), 128);
  // Query de (1, 0), clf (0, 1). Probe 1 proposes de's cluster 0-63 and clf's odd labels. Exact top 10 by hand:
  // de: 63-54 (1 + i/100); clf: odd 127-109 (3·(1 + i/100)); concat (their sum): odd i >= 64 score 3 + 3i/100,
  // odd i < 64 score 4 + 4i/100: 127 (6.81), 125, 123, 121, 119, 63 (6.52), 117, 115, 61, 113. De's top 10 lies
  // in de's candidates only (the even ones), clf's and most of concat's in clf's only: all three need the union.
  const std::vector<EvalResult> results = evaluate_three_modes(TwoBlocks(1), torch::tensor({1.f, 0.f}), torch::tensor({0.f, 1.f}), n, truth);
  ASSERT_EQ(results.size(), 3u);
  for (const EvalResult& result : results) {
    EXPECT_FALSE(result.search_fell_back_to_exact);
    EXPECT_EQ(result.search_probe, 1) << "the target is met at the probe specified";
    EXPECT_EQ(result.search_clusters, 2);
    EXPECT_EQ(result.calibration_queries, n);
    EXPECT_DOUBLE_EQ(result.calibration_recall_at_10, 1.0);
    EXPECT_DOUBLE_EQ(result.search_recall_at_10, 1.0);
  }
  EXPECT_DOUBLE_EQ(results[0].get("P@1"), 1.0) << "concat ranks 127 first (6.81)";
  EXPECT_DOUBLE_EQ(results[1].get("P@1"), 0.0) << "de ranks 63 first";
  EXPECT_DOUBLE_EQ(results[2].get("P@1"), 1.0) << "clf ranks 127 first";
}

TEST(SharedCandidateEvaluation, FallsBackToExactSearchWhenAModeMissesTheTarget) {
  const std::int64_t n = 20;
  const CsrMatrix truth = csr_from_rows(std::vector<std::vector<std::int32_t>>(n, std::vector<std::int32_t>{127}), 128);
  // De's second group at (0, 3·(1 + j/100)); query de (1, 0.5) is nearest the first group's centroid, but its exact
  // top 10 is the second group's labels 118-127 (0.5·3·(1 + j/100) >= 1.77 against at most 1.63). Of those, de's
  // candidates (labels 0-63) hold none and clf's (the odd labels) five: de's recall is 0.5, and probe 2 would be all
  // of the 2 clusters, so every mode is ranked exactly.
  const std::vector<EvalResult> results = evaluate_three_modes(TwoBlocks(3), torch::tensor({1.f, 0.5f}), torch::tensor({0.f, 1.f}), n, truth);
  ASSERT_EQ(results.size(), 3u);
  for (const EvalResult& result : results) {
    EXPECT_TRUE(result.search_fell_back_to_exact);
    EXPECT_EQ(result.search_probe, 1);
    EXPECT_EQ(result.search_recall_queries, 0) << "an exact search has no recall to report";
  }
  EXPECT_DOUBLE_EQ(results[1].calibration_recall_at_10, 0.5);
  EXPECT_DOUBLE_EQ(results[1].get("P@1"), 1.0) << "exactly, de ranks 127 first (1.815)";
  EXPECT_DOUBLE_EQ(results[0].get("P@1"), 1.0) << "exactly, concat ranks 127 first (1.815 + 6.81)";
}

}  // namespace
}  // namespace xmc
