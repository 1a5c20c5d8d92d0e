// bench/eval: metrics for 500k rows x 100 predictions (truth avg 5 labels, L = 500k) held in memory,
// against one plain pass over the same prediction arrays (reading every label and score once).
// Usage: bench_eval [rows] [predictions_per_row] [labels]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "engine/data/propensity.h"
#include "engine/eval/decile_bins.h"
#include "engine/eval/metrics.h"
#include "engine/eval/ranking.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double best_seconds(int repeats, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t rows = argc > 1 ? std::atoll(argv[1]) : 500'000;
  const std::int64_t per_row = argc > 2 ? std::atoll(argv[2]) : 100;
  const std::int32_t labels = argc > 3 ? std::atoi(argv[3]) : 500'000;
  std::mt19937_64 rng(1);
  // Zipf-like label popularity, as in real XMC data.
  auto skewed_label = [&] { return static_cast<std::int32_t>(std::min<double>(labels - 1, std::pow(std::uniform_real_distribution<>(0, 1)(rng), 3.0) * labels)); };

  std::vector<std::int64_t> truth_ptr{0};
  std::vector<std::int32_t> truth;
  std::vector<std::int32_t> pred_labels(static_cast<std::size_t>(rows * per_row));
  std::vector<float> pred_scores(pred_labels.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    const int count = 1 + static_cast<int>(rng() % 9);  // 1..9, mean 5
    std::vector<std::int32_t> row;
    for (int j = 0; j < count; ++j) row.push_back(skewed_label());
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    truth.insert(truth.end(), row.begin(), row.end());
    truth_ptr.push_back(static_cast<std::int64_t>(truth.size()));
    for (std::int64_t r = 0; r < per_row; ++r) {
      const auto at = static_cast<std::size_t>(i * per_row + r);
      // About a third of the true labels are predicted, high up.
      pred_labels[at] = (r < static_cast<std::int64_t>(row.size()) && rng() % 3 == 0) ? row[static_cast<std::size_t>(r)] : skewed_label();
      pred_scores[at] = 1.0f - static_cast<float>(r) / static_cast<float>(per_row);  // already ranked
    }
  }
  std::vector<std::int64_t> freq(static_cast<std::size_t>(labels), 0);
  for (auto l : truth) ++freq[static_cast<std::size_t>(l)];
  const auto inv = xmc::inverse_propensities(freq, rows);
  const auto bins = xmc::decile_bins(freq);

  // Baseline: one plain pass reading every predicted label and score.
  double checksum = 0;
  const double plain = best_seconds(3, [&] {
    double s = 0;
    std::int64_t l = 0;
    for (std::size_t i = 0; i < pred_labels.size(); ++i) l += pred_labels[i], s += pred_scores[i];
    checksum += s + static_cast<double>(l);
  });

  const xmc::EvalOptions options{.ks = {1, 3, 5, 10, 20, 50, 100}, .decile_ks = {5}};
  xmc::EvalResult result;
  const double metrics = best_seconds(3, [&] {
    xmc::StreamingEvaluator e(options, labels, inv, bins);
    for (std::int64_t i = 0; i < rows; ++i)
      e.add_row({truth.data() + truth_ptr[static_cast<std::size_t>(i)], static_cast<std::size_t>(truth_ptr[static_cast<std::size_t>(i) + 1] - truth_ptr[static_cast<std::size_t>(i)])},
                {pred_labels.data() + i * per_row, static_cast<std::size_t>(per_row)});
    result = e.result();
  });

  // With ranking from unsorted scores (what `xmc eval` does per row of a score file).
  const double with_ranking = best_seconds(1, [&] {
    xmc::StreamingEvaluator e(options, labels, inv, bins);
    std::vector<std::int32_t> ranked;
    for (std::int64_t i = 0; i < rows; ++i) {
      xmc::rank_top_k({pred_labels.data() + i * per_row, static_cast<std::size_t>(per_row)},
                      {pred_scores.data() + i * per_row, static_cast<std::size_t>(per_row)}, e.max_k(), {}, ranked);
      e.add_row({truth.data() + truth_ptr[static_cast<std::size_t>(i)], static_cast<std::size_t>(truth_ptr[static_cast<std::size_t>(i) + 1] - truth_ptr[static_cast<std::size_t>(i)])}, ranked);
    }
  });

  std::printf("{\"bench\": \"eval\", \"rows\": %lld, \"predictions_per_row\": %lld, \"labels\": %d, "
              "\"plain_pass_s\": %.4f, \"metrics_s\": %.4f, \"ratio_metrics_to_plain_pass\": %.2f, "
              "\"metrics_with_ranking_s\": %.4f, \"ratio_with_ranking_to_plain_pass\": %.2f, \"P@5\": %.4f, \"checksum\": %g}\n",
              static_cast<long long>(rows), static_cast<long long>(per_row), labels, plain, metrics, metrics / plain, with_ranking,
              with_ranking / plain, result.get("P@5"), checksum);
  return 0;
}
