#include "engine/eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/core/error.h"

namespace xmc {

double EvalResult::get(std::string_view name) const {
  for (const auto& [key, value] : metrics)
    if (key == name) return value;
  std::string known;
  for (const auto& [key, value] : metrics) known += (known.empty() ? "" : ", ") + key;
  throw Error("no metric '" + std::string(name) + "' was computed (available: " + known + ")");
}

StreamingEvaluator::StreamingEvaluator(EvalOptions options, std::int64_t num_labels, std::vector<double> inv_propensities,
                                       std::vector<std::int8_t> bins)
    : options_(std::move(options)),
      num_labels_(num_labels),
      inv_propensities_(std::move(inv_propensities)),
      bins_(std::move(bins)) {
  if (options_.ks.empty()) throw ConfigError("k: give at least one cut-off (e.g. 1,3,5)");
  for (int k : options_.ks)
    if (k <= 0) throw ConfigError("k: cut-offs must be positive, got " + std::to_string(k));
  for (int k : options_.decile_ks)
    if (k <= 0) throw ConfigError("deciles: k must be positive, got " + std::to_string(k));
  if (!inv_propensities_.empty() && static_cast<std::int64_t>(inv_propensities_.size()) != num_labels_)
    throw ConfigError("propensities: got " + std::to_string(inv_propensities_.size()) + " values for " + std::to_string(num_labels_) + " labels");
  if (!options_.decile_ks.empty() && static_cast<std::int64_t>(bins_.size()) != num_labels_)
    throw ConfigError("deciles need the train label frequencies of all " + std::to_string(num_labels_) + " labels");
  for (int k : options_.ks) max_k_ = std::max(max_k_, static_cast<std::size_t>(k));
  for (int k : options_.decile_ks) max_k_ = std::max(max_k_, static_cast<std::size_t>(k));
  sums_.resize(options_.ks.size());
  decile_hits_.assign(options_.decile_ks.size(), {});
}

void StreamingEvaluator::ensure_discounts(std::size_t ranks) {
  for (std::size_t r = discount_.size(); r < ranks; ++r) {
    discount_.push_back(1.0 / std::log2(static_cast<double>(r) + 2.0));
    cumulative_discount_.push_back(discount_[r] + (r > 0 ? cumulative_discount_[r - 1] : 0.0));
  }
}

void StreamingEvaluator::add_row(std::span<const std::int32_t> truth, std::span<const std::int32_t> ranked) {
  const std::size_t num_true = truth.size();
  if (num_true == 0 && options_.drop_empty_rows) return;
  ++rows_;
  if (num_true == 0) return;  // counts as zero for every metric

  const bool with_ps = !inv_propensities_.empty();
  const std::size_t n = std::min(ranked.size(), max_k_);
  ensure_discounts(std::max(n, std::min(num_true, max_k_)));
  find_hit_ranks(truth, ranked.first(n));

  if (with_ps) {
    // Ideal propensity-scored ranking: the row's true labels by descending 1/p.
    ideal_weights_.clear();
    for (auto l : truth) ideal_weights_.push_back(inv_propensities_[static_cast<std::size_t>(l)]);
    const std::size_t m = std::min(num_true, max_k_);
    std::partial_sort(ideal_weights_.begin(), ideal_weights_.begin() + static_cast<std::ptrdiff_t>(m), ideal_weights_.end(), std::greater<>());
    ideal_weights_.resize(m);
  }
  for (std::size_t j = 0; j < options_.ks.size(); ++j) {
    const auto k = static_cast<std::size_t>(options_.ks[j]);
    // Reductions over the hits ranked above k (hit_ranks_ is ascending).
    double hits = 0, dcg = 0, ps = 0, psdcg = 0;
    for (std::uint32_t r : hit_ranks_) {
      if (r >= k) break;
      hits += 1;
      dcg += discount_[r];
      if (with_ps) {
        const double w = inv_propensities_[static_cast<std::size_t>(ranked[r])];
        ps += w;
        psdcg += w * discount_[r];
      }
    }
    // The row's unit-weight ideal DCG: z_i = sum_{r <= min(k, |y_i|)} 1/log2(r+1).
    const double unit_ideal = cumulative_discount_[std::min(k, num_true) - 1];
    Sums& s = sums_[j];
    s.precision += hits / static_cast<double>(k);
    s.ndcg += dcg / unit_ideal;
    s.recall += hits / static_cast<double>(num_true);
    if (with_ps) {
      double ideal_ps = 0, ideal_psdcg = 0;
      for (std::size_t r = 0; r < std::min(k, ideal_weights_.size()); ++r) {
        ideal_ps += ideal_weights_[r];
        ideal_psdcg += ideal_weights_[r] * discount_[r];
      }
      s.psp += ps / static_cast<double>(k);
      s.psp_ideal += ideal_ps / static_cast<double>(k);
      s.psndcg += psdcg / unit_ideal;
      s.psndcg_ideal += ideal_psdcg / unit_ideal;
    }
  }
  for (std::size_t j = 0; j < options_.decile_ks.size(); ++j) {
    const auto k = static_cast<std::size_t>(options_.decile_ks[j]);
    for (std::uint32_t r : hit_ranks_) {
      if (r >= k) break;
      decile_hits_[j][static_cast<std::size_t>(bins_[static_cast<std::size_t>(ranked[r])])] += 1;
    }
  }
}

void StreamingEvaluator::find_hit_ranks(std::span<const std::int32_t> truth, std::span<const std::int32_t> ranked) {
  const std::size_t n = ranked.size();
  hit_flags_.assign(n, 0);
  if (truth.size() <= kSmallTruth) {
    // Few true labels (the common case): compare each against the whole ranking; branch-free loops
    // over a row that stays in L1, which the compiler vectorizes.
    std::uint8_t* flags = hit_flags_.data();
    const std::int32_t* labels = ranked.data();
    for (std::int32_t t : truth)
      for (std::size_t r = 0; r < n; ++r) flags[r] |= static_cast<std::uint8_t>(labels[r] == t);
  } else {
    for (std::size_t r = 0; r < n; ++r) hit_flags_[r] = std::binary_search(truth.begin(), truth.end(), ranked[r]);
  }
  hit_ranks_.clear();
  for (std::size_t r = 0; r < n; ++r)
    if (hit_flags_[r]) hit_ranks_.push_back(static_cast<std::uint32_t>(r));
}

void StreamingEvaluator::merge(const StreamingEvaluator& other) {
  rows_ += other.rows_;
  for (std::size_t j = 0; j < sums_.size(); ++j) {
    Sums& a = sums_[j];
    const Sums& b = other.sums_[j];
    a.precision += b.precision, a.ndcg += b.ndcg, a.recall += b.recall;
    a.psp += b.psp, a.psp_ideal += b.psp_ideal, a.psndcg += b.psndcg, a.psndcg_ideal += b.psndcg_ideal;
  }
  for (std::size_t j = 0; j < decile_hits_.size(); ++j)
    for (int b = 0; b < kNumDeciles; ++b) decile_hits_[j][static_cast<std::size_t>(b)] += other.decile_hits_[j][static_cast<std::size_t>(b)];
}

EvalResult StreamingEvaluator::result() const {
  EvalResult out;
  out.rows = rows_;
  const double rows = rows_ > 0 ? static_cast<double>(rows_) : 1.0;
  const auto ratio = [](double num, double den) { return den > 0 ? num / den : 0.0; };
  const auto family = [&](const char* name, const std::function<double(const Sums&)>& value) {
    for (std::size_t j = 0; j < options_.ks.size(); ++j)
      out.metrics.emplace_back(std::string(name) + "@" + std::to_string(options_.ks[j]), value(sums_[j]));
  };
  family("P", [&](const Sums& s) { return s.precision / rows; });
  family("nDCG", [&](const Sums& s) { return s.ndcg / rows; });
  if (!inv_propensities_.empty()) {
    family("PSP", [&](const Sums& s) { return ratio(s.psp, s.psp_ideal); });
    family("PSnDCG", [&](const Sums& s) { return ratio(s.psndcg, s.psndcg_ideal); });
  }
  family("R", [&](const Sums& s) { return s.recall / rows; });
  for (std::size_t j = 0; j < options_.decile_ks.size(); ++j) {
    std::array<double, kNumDeciles> bars{};
    const double denom = static_cast<double>(options_.decile_ks[j]) * rows;
    for (std::size_t b = 0; b < bars.size(); ++b) bars[b] = decile_hits_[j][b] / denom;
    out.deciles["P@" + std::to_string(options_.decile_ks[j])] = bars;
  }
  return out;
}

}  // namespace xmc
