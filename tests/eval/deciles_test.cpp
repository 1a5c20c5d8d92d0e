#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "engine/eval/decile_bins.h"
#include "engine/eval/metrics.h"

namespace xmc {

TEST(DecileBins, GreedyFillByDescendingFrequency) {
  // Frequencies sum to 100. Sorted: label 5 (50), 4 (30), 0 (10), 2 (5), 3 (5), 1 (0).
  // Positives before each label: 0, 50, 80, 90, 95, 100 -> bins 0, 5, 8, 9, 9, 9 (last bin holds the rest).
  const auto bins = decile_bins({10, 0, 5, 5, 30, 50});
  EXPECT_EQ(bins, (std::vector<std::int8_t>{8, 9, 9, 9, 5, 0}));
}

TEST(DecileBins, EqualFrequenciesSpreadEvenly) {
  const auto bins = decile_bins(std::vector<std::int64_t>(20, 3));
  for (int label = 0; label < 20; ++label) EXPECT_EQ(bins[static_cast<std::size_t>(label)], label / 2) << label;
}

TEST(DecileBins, HandWorkedContributions) {
  // L = 4, train frequencies 6, 2, 1, 1 (total 10): positives before = 0, 6, 8, 9 -> bins 0, 6, 8, 9.
  const std::vector<std::int8_t> bins = decile_bins({6, 2, 1, 1});
  ASSERT_EQ(bins, (std::vector<std::int8_t>{0, 6, 8, 9}));
  StreamingEvaluator e({.ks = {2}, .decile_ks = {2}}, 4, {}, bins);
  e.add_row(std::vector<std::int32_t>{0, 3}, std::vector<std::int32_t>{0, 3});  // two hits: bins 0 and 9
  e.add_row(std::vector<std::int32_t>{1}, std::vector<std::int32_t>{0, 1});     // one hit: bin 6
  const auto r = e.result();
  const auto& bars = r.deciles.at("P@2");
  // Each hit contributes 1 / (k * N_test) = 1/4.
  EXPECT_DOUBLE_EQ(bars[0], 0.25);
  EXPECT_DOUBLE_EQ(bars[6], 0.25);
  EXPECT_DOUBLE_EQ(bars[9], 0.25);
  EXPECT_DOUBLE_EQ(r.get("P@2"), 0.75);
}

TEST(DecileBins, BarsAddUpToPrecisionAtK) {
  std::mt19937_64 rng(42);
  const std::int32_t L = 300;
  std::vector<std::int64_t> freq(L);
  for (auto& f : freq) f = static_cast<std::int64_t>(rng() % 50);
  StreamingEvaluator e({.ks = {1, 5}, .decile_ks = {5}}, L, {}, decile_bins(freq));
  for (int row = 0; row < 500; ++row) {
    std::vector<std::int32_t> truth, ranked;
    for (int j = 0; j < 6; ++j) truth.push_back(static_cast<std::int32_t>(rng() % L));
    std::sort(truth.begin(), truth.end());
    truth.erase(std::unique(truth.begin(), truth.end()), truth.end());
    for (int j = 0; j < 7; ++j) ranked.push_back(j < 3 && j < static_cast<int>(truth.size()) ? truth[static_cast<std::size_t>(j)] : static_cast<std::int32_t>(rng() % L));
    e.add_row(truth, ranked);
  }
  const auto r = e.result();
  const auto& bars = r.deciles.at("P@5");
  EXPECT_NEAR(std::accumulate(bars.begin(), bars.end(), 0.0), r.get("P@5"), 1e-12);
  EXPECT_GT(r.get("P@5"), 0.5);  // at least 3 of 5 predictions are hits by construction
}

}  // namespace xmc
