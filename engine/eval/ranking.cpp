#include "engine/eval/ranking.h"

#include <algorithm>

namespace xmc {

void rank_top_k(std::span<const std::int32_t> labels, std::span<const float> scores, std::size_t k,
                std::span<const std::int32_t> excluded, std::vector<std::int32_t>& ranked) {
  thread_local std::vector<std::pair<float, std::int32_t>> candidates;
  candidates.clear();
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (excluded.empty() || !std::binary_search(excluded.begin(), excluded.end(), labels[i]))
      candidates.emplace_back(scores[i], labels[i]);
  const auto better = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  const std::size_t keep = std::min(k, candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), candidates.end(), better);
  ranked.resize(keep);
  for (std::size_t i = 0; i < keep; ++i) ranked[i] = candidates[i].second;
}

}  // namespace xmc
