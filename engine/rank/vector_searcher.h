#pragma once
// Engine-internal (includes torch). The labels of a label matrix ranked by inner product with the query vectors:
// exactly, on the matrix where it lies (an exact index would hold a copy of its own: UniDEC's three came to 5 GB
// beside the 2.7 GB matrix at 1.3M labels), or through an approximate index over its rows.
#include <memory>
#include <string>
#include <vector>

#include "engine/index/index.h"
#include "engine/rank/label_searcher.h"

namespace xmc {

class VectorSearcher final : public LabelSearcher {
 public:
  /// Searches `label_matrix` ([L x d]) for vectors of `query_encoder`: through `index` (over the same rows) when given.
  VectorSearcher(std::string query_encoder, torch::Tensor label_matrix, std::unique_ptr<Index> index = nullptr);

  const std::string& query_encoder() const override { return query_encoder_; }
  std::int64_t num_labels() const override;
  RankedPredictions search(const SearchQueries& queries, std::int64_t k) const override;
  /// The exact score of every row, product chunk by product chunk as exact search computes them, so that ranks
  /// agree with the exact index's order (equal scores: lower row first).
  std::vector<LabelPlace> places_of(const SearchQueries& query, const std::vector<std::int64_t>& labels) const override;
  torch::Tensor label_vectors() const override { return matrix(); }
  bool searches_every_label_vector() const override { return true; }
  void add(const torch::Tensor& vectors, std::int64_t first_label) override;

 private:
  /// The matrix with the rows added since it was last made whole: copying a 10^4-row matrix for every added label
  /// took milliseconds, so added rows wait here until a search needs the matrix.
  const torch::Tensor& matrix() const;

  std::string query_encoder_;
  mutable torch::Tensor matrix_;
  mutable std::vector<torch::Tensor> pending_;
  std::int64_t rows_ = 0;
  std::unique_ptr<Index> index_;
};

}  // namespace xmc
