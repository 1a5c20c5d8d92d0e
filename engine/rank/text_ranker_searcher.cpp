#include "engine/rank/text_ranker_searcher.h"

#include <algorithm>

#include "engine/core/error.h"

namespace xmc {

RankedPredictions TextRankerSearcher::search(const SearchQueries& queries, std::int64_t k) const {
  k = std::max<std::int64_t>(0, std::min(k, num_labels()));
  if (k == 0 || queries.rows() == 0) return {torch::full({queries.rows(), k}, -1, torch::kInt64), torch::zeros({queries.rows(), k}, torch::kFloat32)};
  return ranker_->rank(*queries.texts, queries.begin, queries.end, k);
}

void TextRankerSearcher::add(const torch::Tensor& /*vectors*/, std::int64_t /*first_label*/) {
  throw Error("this mode ranks labels by itself from rankers trained on the run's labels: it cannot take new labels");
}

}  // namespace xmc
