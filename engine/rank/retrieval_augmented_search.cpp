#include "engine/rank/retrieval_augmented_search.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/core/error.h"

namespace xmc {

RankedPredictions rank_with_retrieval(const torch::Tensor& queries, const torch::Tensor& label_matrix, const RetrievalAugmentation& rag,
                                      std::int64_t top, const FilterPairs* filter, std::int64_t row_offset) {
  if (rag.train_labels == nullptr || rag.train_labels->rows != rag.train_queries.size(0))
    throw ConfigError("rag: " + std::to_string(rag.train_queries.size(0)) + " training query vectors but " +
                      std::to_string(rag.train_labels == nullptr ? 0 : rag.train_labels->rows) + " rows of training labels");
  torch::NoGradGuard no_grad;
  const std::int64_t n = queries.size(0);
  const torch::Tensor q = queries.detach().to(torch::kCPU, torch::kFloat);
  const torch::Tensor labels = label_matrix.detach().to(torch::kCPU, torch::kFloat);
  const torch::Tensor neighbours = rag.train_queries.detach().to(torch::kCPU, torch::kFloat);
  const std::int64_t k_labels = std::min(rag.top, labels.size(0));
  const std::int64_t k_queries = std::min(rag.top, neighbours.size(0));

  RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
  auto* id_out = out.labels.data_ptr<std::int64_t>();
  auto* score_out = out.scores.data_ptr<float>();
  constexpr std::int64_t kChunk = 1024;  // queries scored against all labels and training queries at once
  std::unordered_map<std::int64_t, double> score;
  std::vector<std::pair<double, std::int64_t>> ranked;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t rows = std::min(kChunk, n - start);
    const torch::Tensor chunk = q.narrow(0, start, rows);
    const auto [label_scores, label_ids] = torch::matmul(chunk, labels.t()).topk(k_labels, 1);
    const auto [query_scores, query_ids] = k_queries > 0 ? torch::matmul(chunk, neighbours.t()).topk(k_queries, 1)
                                                         : std::make_tuple(torch::empty({rows, 0}), torch::empty({rows, 0}, torch::kLong));
    // One softmax over the joint list of both parts' scores.
    const torch::Tensor probabilities =
        torch::softmax(torch::cat({label_scores, query_scores}, 1).to(torch::kDouble) / rag.temperature, 1).contiguous();
    const auto* p = probabilities.data_ptr<double>();
    const torch::Tensor label_ids_c = label_ids.contiguous(), query_ids_c = query_ids.contiguous();
    const auto* lid = label_ids_c.data_ptr<std::int64_t>();
    const auto* qid = query_ids_c.data_ptr<std::int64_t>();
    const std::int64_t width = k_labels + k_queries;
    for (std::int64_t r = 0; r < rows; ++r) {
      score.clear();
      for (std::int64_t j = 0; j < k_labels; ++j) score[lid[r * k_labels + j]] += rag.lambda * p[r * width + j];
      for (std::int64_t j = 0; j < k_queries; ++j) {
        const double vote = (1.0 - rag.lambda) * p[r * width + k_labels + j];
        for (const std::int32_t label : rag.train_labels->row_indices(qid[r * k_queries + j])) score[label] += vote;
      }
      const auto excluded = (filter != nullptr && !filter->empty()) ? filter->labels_of(row_offset + start + r) : std::vector<std::int32_t>{};
      ranked.clear();
      for (const auto& [label, value] : score)
        if (excluded.empty() || !std::binary_search(excluded.begin(), excluded.end(), static_cast<std::int32_t>(label)))
          ranked.emplace_back(value, label);
      // Best first; equal scores by lower label id, as every other ranking here.
      const auto kept = std::min<std::size_t>(ranked.size(), static_cast<std::size_t>(top));
      std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(kept), ranked.end(),
                        [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
      for (std::size_t j = 0; j < kept; ++j) {
        id_out[(start + r) * top + static_cast<std::int64_t>(j)] = ranked[j].second;
        score_out[(start + r) * top + static_cast<std::int64_t>(j)] = static_cast<float>(ranked[j].first);
      }
    }
  }
  return out;
}

RetrievalAugmentedSearcher::RetrievalAugmentedSearcher(const LabelSearcher& labels, RetrievalAugmentation rag) : labels_(labels), rag_(std::move(rag)) {
  if (!labels_.searches_every_label_vector()) throw Error("rag: retrieval augmentation builds on a mode that scores every label by its vector");
  rag_.train_queries = rag_.train_queries.detach().to(torch::kCPU, torch::kFloat).contiguous();
}

const torch::Tensor& RetrievalAugmentedSearcher::cpu_labels() const {
  if (!cpu_labels_.defined() || cpu_labels_.size(0) != labels_.num_labels())
    cpu_labels_ = labels_.label_vectors().detach().to(torch::kCPU, torch::kFloat).contiguous();
  return cpu_labels_;
}

RankedPredictions RetrievalAugmentedSearcher::search(const SearchQueries& queries, std::int64_t k) const {
  return rank_with_retrieval(queries.vectors, cpu_labels(), rag_, std::min(k, num_labels()));
}

}  // namespace xmc
