#include "engine/eval/held_out_weight_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/core/error.h"

namespace xmc {

HeldOutWeightChoice::HeldOutWeightChoice(std::vector<double> weights) : weights_(std::move(weights)), sums_(weights_.size(), 0.0) {
  if (weights_.empty()) throw Error("weight choice: no weights to try");
  for (const double w : weights_)
    if (!(w >= 0 && w <= 1)) throw Error("weight choice: weight " + std::to_string(w) + " is outside [0, 1]");
}

std::vector<double> HeldOutWeightChoice::scores() const {
  std::vector<double> out(sums_.size(), 0.0);
  if (queries_ == 0) return out;
  for (std::size_t i = 0; i < sums_.size(); ++i) out[i] = sums_[i] / static_cast<double>(queries_);
  return out;
}

double HeldOutWeightChoice::best(double preferred) const {
  const std::vector<double> s = scores();
  std::size_t best = 0;
  for (std::size_t i = 1; i < s.size(); ++i) {
    // Equal within rounding of the per-query sums: the nearer to `preferred` wins.
    const bool tie = std::abs(s[i] - s[best]) <= 1e-12;
    if ((!tie && s[i] > s[best]) || (tie && std::abs(weights_[i] - preferred) < std::abs(weights_[best] - preferred))) best = i;
  }
  return weights_[best];
}

std::string HeldOutWeightChoice::curve(int decimals) const {
  const std::vector<double> s = scores();
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char item[48];
    std::snprintf(item, sizeof item, "%s%.*f: %.4f", i == 0 ? "" : ", ", decimals, weights_[i], s[i]);
    out += item;
  }
  return out;
}

double precision_1_3_5(std::span<const std::int64_t> ranked, std::span<const std::int32_t> truth) {
  double hits = 0, score = 0;
  for (std::size_t j = 0; j < 5; ++j) {
    if (j < ranked.size() && std::find(truth.begin(), truth.end(), static_cast<std::int32_t>(ranked[j])) != truth.end()) hits += 1;
    if (j == 0 || j == 2 || j == 4) score += hits / static_cast<double>(j + 1);
  }
  return score;
}

bool beats_by_a_standard_error(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size())
    throw Error("paired scores of " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + " queries");
  const auto n = static_cast<double>(a.size());
  if (a.size() < 2) return false;
  double mean = 0;
  for (std::size_t i = 0; i < a.size(); ++i) mean += a[i] - b[i];
  mean /= n;
  double squares = 0;
  for (std::size_t i = 0; i < a.size(); ++i) squares += (a[i] - b[i] - mean) * (a[i] - b[i] - mean);
  const double standard_error = std::sqrt(squares / (n - 1)) / std::sqrt(n);
  return mean > standard_error;
}

}  // namespace xmc
