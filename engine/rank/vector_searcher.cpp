#include "engine/rank/vector_searcher.h"

#include <algorithm>

#include "engine/index/exact_search.h"

namespace xmc {

VectorSearcher::VectorSearcher(std::string query_encoder, torch::Tensor label_matrix, std::unique_ptr<Index> index)
    : query_encoder_(std::move(query_encoder)), matrix_(std::move(label_matrix)), rows_(matrix_.size(0)), index_(std::move(index)) {}

std::int64_t VectorSearcher::num_labels() const { return index_ ? index_->ntotal() : rows_; }

const torch::Tensor& VectorSearcher::matrix() const {
  if (!pending_.empty()) {
    pending_.insert(pending_.begin(), matrix_);
    matrix_ = torch::cat(pending_);
    pending_.clear();
  }
  return matrix_;
}

RankedPredictions VectorSearcher::search(const SearchQueries& queries, std::int64_t k) const {
  const torch::Tensor q = queries.vectors.to(torch::kCPU, torch::kFloat32).contiguous();
  const std::int64_t n = q.size(0);
  k = std::max<std::int64_t>(0, std::min(k, num_labels()));
  RankedPredictions found{torch::full({n, k}, -1, torch::kInt64), torch::zeros({n, k}, torch::kFloat32)};
  if (k == 0 || n == 0) return found;
  if (index_) {
    index_->search(n, q.data_ptr<float>(), k, found.scores.data_ptr<float>(), found.labels.data_ptr<std::int64_t>());
    return found;
  }
  torch::Tensor keys = matrix().detach();  // the search an exact index runs, on the label matrix itself
  if (keys.scalar_type() != torch::kFloat) keys = keys.to(torch::kFloat);
  const TopK top = exact_top_k(q.to(keys.device()), keys, k);
  found.scores.copy_(top.scores.to(torch::kCPU));
  found.labels.copy_(top.indices.to(torch::kCPU));
  return found;
}

std::vector<LabelPlace> VectorSearcher::places_of(const SearchQueries& query, const std::vector<std::int64_t>& labels) const {
  std::vector<LabelPlace> out(labels.size());
  if (labels.empty()) return out;
  const torch::Tensor& keys = matrix();
  const torch::Tensor q = query.vectors.to(keys.device(), keys.scalar_type());
  const std::int64_t key_chunk = ExactSearchOptions{}.key_chunk;
  std::vector<torch::Tensor> parts;
  for (std::int64_t k0 = 0; k0 < keys.size(0); k0 += key_chunk)
    parts.push_back(chunk_inner_products(q, keys.narrow(0, k0, std::min(key_chunk, keys.size(0) - k0))).reshape({-1}));
  const torch::Tensor scores = torch::cat(parts).to(torch::kCPU, torch::kFloat32).contiguous();
  const float* s = scores.data_ptr<float>();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::int64_t label = labels[i];
    if (!ranks(label)) continue;
    const float own = s[label];
    std::int64_t better = 0;
    for (std::int64_t r = 0; r < scores.size(0); ++r) better += s[r] > own || (r < label && s[r] == own);
    out[i] = {better + 1, own};
  }
  return out;
}

void VectorSearcher::add(const torch::Tensor& vectors, std::int64_t /*first_label*/) {
  pending_.push_back(vectors.to(matrix_.device(), matrix_.scalar_type()));
  rows_ += vectors.size(0);
  if (index_) {
    const torch::Tensor rows = vectors.to(torch::kCPU, torch::kFloat32).contiguous();
    index_->add(rows.size(0), rows.data_ptr<float>());
  }
}

}  // namespace xmc
