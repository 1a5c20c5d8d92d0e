#pragma once
// Plain C++. Choosing a mixing weight on held-out queries, as UniDEC's concat weight and xrlinear's fusion weight
// are chosen: every weight of a grid ranks each held-out query, each ranking scores its P@1 + P@3 + P@5, the
// scores are averaged per weight, and the best mean wins; of equal means, the weight nearest a preferred one
// (the configured value).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace xmc {

class HeldOutWeightChoice {
 public:
  /// @param weights  the grid tried, each in [0, 1] (Error otherwise, or when empty)
  explicit HeldOutWeightChoice(std::vector<double> weights);

  const std::vector<double>& weights() const { return weights_; }
  /// Adds to weight i's total the score of some queries (P@1 + P@3 + P@5 each, summed); count them with add_queries.
  void add_score(std::size_t weight, double score) { sums_.at(weight) += score; }
  void add_queries(std::int64_t count) { queries_ += count; }

  std::int64_t queries() const { return queries_; }
  /// Mean score over the queries added so far, per weight (zeros before any).
  std::vector<double> scores() const;
  /// The weight with the highest mean; of equal means, the one nearest `preferred`.
  double best(double preferred) const;
  /// Every weight with its mean, "0.0: 1.4120, 0.1: 1.4250, ...", the weights with `decimals` decimals: the whole
  /// curve for a run's log, so that a reader sees how flat it is.
  std::string curve(int decimals) const;

 private:
  std::vector<double> weights_;
  std::vector<double> sums_;
  std::int64_t queries_ = 0;
};

/// Whether per-query scores `a` beat `b` (the same queries, paired) by more than one standard error of their
/// difference: mean(a − b) > sd(a − b) / √n. A choice on a few hundred held-out queries moves with noise of that size;
/// a candidate that does not clear it is no evidence against the configured value (the "one standard error" rule).
/// Error when the two differ in length; false for fewer than two queries.
bool beats_by_a_standard_error(std::span<const double> a, std::span<const double> b);

/// P@1 + P@3 + P@5 of one query's ranking `ranked` (best first; only its first 5 count, fewer count as misses)
/// against its labels `truth`.
double precision_1_3_5(std::span<const std::int64_t> ranked, std::span<const std::int32_t> truth);

}  // namespace xmc
