#include "engine/rank/subset_searcher.h"

#include <algorithm>

namespace xmc {

SubsetSearcher::SubsetSearcher(std::unique_ptr<LabelSearcher> rows, std::vector<std::int64_t> label_ids)
    : rows_(std::move(rows)), label_ids_(std::move(label_ids)) {}

std::int64_t SubsetSearcher::row_of(std::int64_t label) const {
  const auto at = std::find(label_ids_.begin(), label_ids_.end(), label);
  return at == label_ids_.end() ? -1 : at - label_ids_.begin();
}

RankedPredictions SubsetSearcher::search(const SearchQueries& queries, std::int64_t k) const {
  RankedPredictions found = rows_->search(queries, k);
  auto* ids = found.labels.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < found.labels.numel(); ++i)
    if (ids[i] >= 0) ids[i] = label_ids_[static_cast<std::size_t>(ids[i])];
  return found;
}

std::vector<LabelPlace> SubsetSearcher::places_of(const SearchQueries& query, const std::vector<std::int64_t>& labels) const {
  std::vector<std::int64_t> rows;
  for (const std::int64_t label : labels) rows.push_back(row_of(label));  // -1: a label it does not rank, placed nowhere
  return rows_->places_of(query, rows);
}

void SubsetSearcher::add(const torch::Tensor& vectors, std::int64_t first_label) {
  rows_->add(vectors, static_cast<std::int64_t>(label_ids_.size()));
  for (std::int64_t i = 0; i < vectors.size(0); ++i) label_ids_.push_back(first_label + i);
}

}  // namespace xmc
