#pragma once
// Engine-internal (includes torch). A searcher over some of the run's labels (IRENE's novel labels of a zero-shot
// split), as FAISS's IndexIDMap: the inner searcher ranks its own rows, which this maps to the labels they are.
#include <memory>
#include <vector>

#include "engine/rank/label_searcher.h"

namespace xmc {

class SubsetSearcher final : public LabelSearcher {
 public:
  /// `rows` ranks label_ids[row] at each of its rows.
  SubsetSearcher(std::unique_ptr<LabelSearcher> rows, std::vector<std::int64_t> label_ids);

  const std::string& query_encoder() const override { return rows_->query_encoder(); }
  std::int64_t num_labels() const override { return static_cast<std::int64_t>(label_ids_.size()); }
  bool ranks(std::int64_t label) const override { return row_of(label) >= 0; }
  RankedPredictions search(const SearchQueries& queries, std::int64_t k) const override;
  std::vector<LabelPlace> places_of(const SearchQueries& query, const std::vector<std::int64_t>& labels) const override;
  torch::Tensor label_vectors() const override { return rows_->label_vectors(); }
  /// New labels are ranked too (a novel label added later is one of the subset's kind).
  void add(const torch::Tensor& vectors, std::int64_t first_label) override;

 private:
  std::int64_t row_of(std::int64_t label) const;

  std::unique_ptr<LabelSearcher> rows_;
  std::vector<std::int64_t> label_ids_;
};

}  // namespace xmc
