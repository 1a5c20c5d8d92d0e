#include "engine/rank/label_searcher.h"

namespace xmc {

std::vector<LabelPlace> LabelSearcher::places_of(const SearchQueries& query, const std::vector<std::int64_t>& labels) const {
  std::vector<LabelPlace> out(labels.size());
  if (labels.empty()) return out;
  // One ranking of every label serves them all: its first k are the first k of any shorter one.
  const RankedPredictions ranked = search(query, num_labels());
  const auto* ids = ranked.labels.data_ptr<std::int64_t>();
  const auto* scores = ranked.scores.data_ptr<float>();
  for (std::int64_t j = 0; j < ranked.labels.size(1) && ids[j] >= 0; ++j)
    for (std::size_t i = 0; i < labels.size(); ++i)
      if (ids[j] == labels[i]) out[i] = {j + 1, scores[j]};
  return out;
}

}  // namespace xmc
