#include "engine/method/xrlinear/score_fusion.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace xmc {

std::vector<FusedLabel> weigh_scores(std::span<const std::int64_t> labels, std::span<const float> first, std::span<const float> second, double alpha,
                                     std::int64_t top) {
  if (first.size() != labels.size() || second.size() != labels.size())
    throw Error("score fusion: " + std::to_string(labels.size()) + " labels but " + std::to_string(first.size()) + " and " +
                std::to_string(second.size()) + " scores");
  std::vector<FusedLabel> out;
  if (labels.empty() || top <= 0) return out;
  out.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    out.push_back({labels[i], static_cast<float>(alpha * static_cast<double>(first[i]) + (1 - alpha) * static_cast<double>(second[i]))});
  const auto kept = std::min<std::size_t>(out.size(), static_cast<std::size_t>(top));
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(kept), out.end(),
                    [](const FusedLabel& a, const FusedLabel& b) { return a.score != b.score ? a.score > b.score : a.label < b.label; });
  out.resize(kept);
  return out;
}

std::vector<FusedLabel> fuse_with_shares(std::span<const std::int64_t> labels, std::span<const float> tree_scores, std::span<const float> shares,
                                         double alpha, std::int64_t top) {
  if (tree_scores.size() != labels.size()) throw Error("score fusion: " + std::to_string(labels.size()) + " labels but " + std::to_string(tree_scores.size()) + " tree scores");
  if (labels.empty()) return {};
  const double best = *std::max_element(tree_scores.begin(), tree_scores.end());
  std::vector<float> relative(tree_scores.size());
  for (std::size_t i = 0; i < relative.size(); ++i) relative[i] = best > 0 ? static_cast<float>(static_cast<double>(tree_scores[i]) / best) : 0.0f;
  return weigh_scores(labels, relative, shares, alpha, top);
}

std::vector<FusedLabel> fuse_scores(std::span<const std::int64_t> labels, std::span<const float> tree_scores, std::span<const float> dense_scores,
                                    double alpha, std::int64_t top) {
  if (tree_scores.size() != labels.size() || dense_scores.size() != labels.size())
    throw Error("score fusion: " + std::to_string(labels.size()) + " labels but " + std::to_string(tree_scores.size()) + " tree and " +
                std::to_string(dense_scores.size()) + " dense scores");
  if (labels.empty()) return {};
  const auto [low, high] = std::minmax_element(dense_scores.begin(), dense_scores.end());
  const double range = static_cast<double>(*high) - static_cast<double>(*low);
  std::vector<float> scaled(dense_scores.size());
  for (std::size_t i = 0; i < scaled.size(); ++i)
    scaled[i] = range > 0 ? static_cast<float>((static_cast<double>(dense_scores[i]) - static_cast<double>(*low)) / range) : 0.0f;
  return weigh_scores(labels, tree_scores, scaled, alpha, top);
}

}  // namespace xmc
