#pragma once
// Engine-internal (includes torch). A searcher that reads the queries' tokens and ranks by itself (a QueryRanker:
// xrlinear's beam search down its label trees); it has no vectors.
#include <memory>

#include "engine/rank/label_searcher.h"

namespace xmc {

class TextRankerSearcher final : public LabelSearcher {
 public:
  explicit TextRankerSearcher(std::shared_ptr<const QueryRanker> ranker) : ranker_(std::move(ranker)) {}

  const std::string& query_encoder() const override { return no_encoder_; }
  std::int64_t num_labels() const override { return ranker_->num_labels(); }
  RankedPredictions search(const SearchQueries& queries, std::int64_t k) const override;
  /// Throws Error: its rankers were trained on the labels it has.
  void add(const torch::Tensor& vectors, std::int64_t first_label) override;

 private:
  std::shared_ptr<const QueryRanker> ranker_;
  std::string no_encoder_;
};

}  // namespace xmc
