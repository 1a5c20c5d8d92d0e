#include "engine/method/xrlinear/score_fusion.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace xmc {
namespace {

/// The `top` best of `out` first, in order (ties: the smaller label id first); the rest dropped.
void sort_best_first(std::vector<FusedLabel>& out, std::int64_t top) {
  const auto kept = std::min<std::size_t>(out.size(), static_cast<std::size_t>(top));
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(kept), out.end(),
                    [](const FusedLabel& a, const FusedLabel& b) { return a.score != b.score ? a.score > b.score : a.label < b.label; });
  out.resize(kept);
}

}  // namespace

std::vector<float> share_weighted_scores(std::span<const float> tree_scores, std::span<const float> shares, double alpha) {
  if (shares.size() != tree_scores.size())
    throw Error("score fusion: " + std::to_string(tree_scores.size()) + " tree scores but " + std::to_string(shares.size()) + " shares");
  std::vector<float> out;
  if (tree_scores.empty()) return out;
  const double best = *std::max_element(tree_scores.begin(), tree_scores.end());
  out.reserve(tree_scores.size());
  for (std::size_t i = 0; i < tree_scores.size(); ++i) {
    const double relative = best > 0 ? static_cast<double>(tree_scores[i]) / best : 0.0;
    out.push_back(static_cast<float>(alpha * relative + (1 - alpha) * static_cast<double>(shares[i])));
  }
  return out;
}

std::vector<FusedLabel> fuse_with_shares(std::span<const std::int64_t> labels, std::span<const float> tree_scores, std::span<const float> shares,
                                         double alpha, std::int64_t top) {
  if (tree_scores.size() != labels.size() || shares.size() != labels.size())
    throw Error("score fusion: " + std::to_string(labels.size()) + " labels but " + std::to_string(tree_scores.size()) + " tree scores and " +
                std::to_string(shares.size()) + " shares");
  std::vector<FusedLabel> out;
  if (labels.empty() || top <= 0) return out;
  const std::vector<float> scores = share_weighted_scores(tree_scores, shares, alpha);
  out.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) out.push_back({labels[i], scores[i]});
  sort_best_first(out, top);
  return out;
}

std::vector<FusedLabel> fuse_scores(std::span<const std::int64_t> labels, std::span<const float> tree_scores, std::span<const float> dense_scores,
                                    double alpha, std::int64_t top) {
  if (tree_scores.size() != labels.size() || dense_scores.size() != labels.size())
    throw Error("score fusion: " + std::to_string(labels.size()) + " labels but " + std::to_string(tree_scores.size()) + " tree and " +
                std::to_string(dense_scores.size()) + " dense scores");
  std::vector<FusedLabel> out;
  if (labels.empty() || top <= 0) return out;
  const auto [low, high] = std::minmax_element(dense_scores.begin(), dense_scores.end());
  const double range = static_cast<double>(*high) - static_cast<double>(*low);
  out.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const double dense = range > 0 ? (static_cast<double>(dense_scores[i]) - static_cast<double>(*low)) / range : 0.0;
    out.push_back({labels[i], static_cast<float>(alpha * static_cast<double>(tree_scores[i]) + (1 - alpha) * dense)});
  }
  sort_best_first(out, top);
  return out;
}

}  // namespace xmc
