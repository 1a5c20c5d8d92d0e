#pragma once
// Ranking metrics of extreme classification, exactly as pyxclib defines them (DESIGN.md section 4):
// P@k, nDCG@k, PSP@k, PSnDCG@k, R@k and decile-wise P@k. Rows are streamed one at a time: evaluation
// never needs an N x L matrix. One pass per row builds top-K hit flags; each metric is a short
// reduction over them.
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/eval/decile_bins.h"

namespace xmc {

struct EvalOptions {
  std::vector<int> ks{1, 3, 5};  ///< cut-offs reported for every metric
  std::vector<int> decile_ks;    ///< k of the decile-wise P@k tables (e.g. {5}); needs label bins
  bool drop_empty_rows = false;  ///< skip rows without positives (default: they count as zero)
};

struct EvalResult {
  std::int64_t rows = 0;                                  ///< rows that were scored
  std::vector<std::pair<std::string, double>> metrics;    ///< "P@1", "nDCG@3", ... as fractions in [0,1]
  std::map<std::string, std::array<double, kNumDeciles>> deciles;  ///< "P@5" -> bins (head first); sums to P@5
  /// An approximate search's share of the exact top 10 it found, over `search_recall_queries` sampled test
  /// queries (before any filtering); -1 when the search was exact.
  double search_recall_at_10 = -1;
  std::int64_t search_recall_queries = 0;
  /// An inverted file tuned to a recall target (EvaluationSetup::recall_target): the probe it ranked with (the
  /// last one tried when it fell back), of how many clusters, and its recall@10 on the calibration queries.
  std::int64_t search_probe = 0;
  std::int64_t search_clusters = 0;
  double calibration_recall_at_10 = -1;
  std::int64_t calibration_queries = 0;
  bool search_fell_back_to_exact = false;  ///< no probe up to half the clusters reached the target: ranked exactly

  /// Value of a metric by name; throws xmc::Error listing the available names when absent.
  double get(std::string_view name) const;
};

class StreamingEvaluator {
 public:
  /// @param num_labels        L; ranked and true labels must be < L
  /// @param inv_propensities  1/p_l per label (size L) to report PSP/PSnDCG; empty to skip them
  /// @param bins              decile bin of each label (size L) for options.decile_ks; empty to skip
  StreamingEvaluator(EvalOptions options, std::int64_t num_labels, std::vector<double> inv_propensities = {},
                     std::vector<std::int8_t> bins = {});

  /// Largest k that any metric looks at: callers only need to rank this many predictions.
  std::size_t max_k() const { return max_k_; }

  /// Scores one row. `truth` is sorted ascending; `ranked` is best first (already filtered), any length.
  void add_row(std::span<const std::int32_t> truth, std::span<const std::int32_t> ranked);

  /// Adds another evaluator's rows (same options), for evaluating chunks in parallel.
  void merge(const StreamingEvaluator& other);

  EvalResult result() const;

 private:
  struct Sums {
    double precision = 0, ndcg = 0, recall = 0;
    double psp = 0, psp_ideal = 0, psndcg = 0, psndcg_ideal = 0;
  };

  EvalOptions options_;
  std::int64_t num_labels_;
  std::vector<double> inv_propensities_;
  std::vector<std::int8_t> bins_;
  std::size_t max_k_ = 0;
  /// Extends the discount tables to `ranks` entries: they grow with the rankings and truth rows seen, not with
  /// the largest k asked for (--k 1000000000 would otherwise take 16 GB before the first row).
  void ensure_discounts(std::size_t ranks);
  std::vector<double> discount_;             ///< 1 / log2(r + 2) for rank r = 0.. (as far as needed so far)
  std::vector<double> cumulative_discount_;  ///< sum of discount_[0..r]
  std::int64_t rows_ = 0;
  std::vector<Sums> sums_;  ///< one per options_.ks entry
  std::vector<std::array<double, kNumDeciles>> decile_hits_;  ///< one per options_.decile_ks entry

  /// Fills hit_ranks_ with the ranks r (ascending) where ranked[r] is a true label.
  void find_hit_ranks(std::span<const std::int32_t> truth, std::span<const std::int32_t> ranked);
  static constexpr std::size_t kSmallTruth = 32;  ///< up to this many true labels: brute-force compare

  // Per-row scratch, kept to avoid allocations in the hot loop.
  std::vector<std::uint8_t> hit_flags_;
  std::vector<std::uint32_t> hit_ranks_;
  std::vector<double> ideal_weights_;
};

}  // namespace xmc
