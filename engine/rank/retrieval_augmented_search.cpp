#include "engine/rank/retrieval_augmented_search.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/csr_rows.h"
#include "engine/eval/held_out_weight_choice.h"

namespace xmc {

std::vector<RankedPredictions> rank_with_retrieval_at(const torch::Tensor& queries, const torch::Tensor& label_matrix, const RetrievalAugmentation& rag,
                                                      std::span<const double> lambdas, std::int64_t top, const FilterPairs* filter, std::int64_t row_offset) {
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

  std::vector<RankedPredictions> out;
  for (std::size_t i = 0; i < lambdas.size(); ++i) out.push_back({torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)});
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
      const auto excluded = (filter != nullptr && !filter->empty()) ? filter->labels_of(row_offset + start + r) : std::vector<std::int32_t>{};
      for (std::size_t i = 0; i < lambdas.size(); ++i) {
        const double lambda = lambdas[i];
        auto* id_out = out[i].labels.data_ptr<std::int64_t>();
        auto* score_out = out[i].scores.data_ptr<float>();
        score.clear();
        for (std::int64_t j = 0; j < k_labels; ++j) score[lid[r * k_labels + j]] += lambda * p[r * width + j];
        for (std::int64_t j = 0; j < k_queries; ++j) {
          const double vote = (1.0 - lambda) * p[r * width + k_labels + j];
          for (const std::int32_t label : rag.train_labels->row_indices(qid[r * k_queries + j])) score[label] += vote;
        }
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
  }
  return out;
}

RankedPredictions rank_with_retrieval(const torch::Tensor& queries, const torch::Tensor& label_matrix, const RetrievalAugmentation& rag,
                                      std::int64_t top, const FilterPairs* filter, std::int64_t row_offset) {
  const double lambda = rag.lambda;
  return std::move(rank_with_retrieval_at(queries, label_matrix, rag, {&lambda, 1}, top, filter, row_offset).front());
}

RagLambdaChoice choose_rag_lambda(const RetrievalAugmentation& rag, std::span<const std::int64_t> held_out_rows, const torch::Tensor& label_matrix) {
  const std::int64_t n = rag.train_queries.size(0);
  if (rag.train_labels == nullptr || rag.train_labels->rows != n)
    throw ConfigError("rag: " + std::to_string(n) + " training query vectors but " + std::to_string(rag.train_labels == nullptr ? 0 : rag.train_labels->rows) +
                      " rows of training labels");
  // At most kMostQueries of the held-out rows, evenly spaced: the choice's products grow with them.
  constexpr std::size_t kMostQueries = 5000;
  std::vector<std::int64_t> held;
  const std::size_t step_count = std::min(held_out_rows.size(), kMostQueries);
  for (std::size_t i = 0; i < step_count; ++i) held.push_back(held_out_rows[i * held_out_rows.size() / step_count]);
  std::vector<char> is_held(static_cast<std::size_t>(n), 0);
  for (const std::int64_t row : held_out_rows) {
    if (row < 0 || row >= n) throw Error("rag.lambda_from: held-out row " + std::to_string(row) + " is not a training query (" + std::to_string(n) + ")");
    is_held[static_cast<std::size_t>(row)] = 1;
  }
  // The held-out queries are ranked against the other training queries only: found among the neighbours, each
  // would vote for its own labels.
  std::vector<std::int64_t> kept;
  for (std::int64_t row = 0; row < n; ++row)
    if (!is_held[static_cast<std::size_t>(row)]) kept.push_back(row);
  const CsrMatrix kept_labels = csr_rows(*rag.train_labels, kept), truth = csr_rows(*rag.train_labels, held);
  RetrievalAugmentation others = rag;
  others.train_queries = rag.train_queries.index_select(0, torch::tensor(kept, torch::kInt64).to(rag.train_queries.device()));
  others.train_labels = &kept_labels;
  const torch::Tensor queries = rag.train_queries.index_select(0, torch::tensor(held, torch::kInt64).to(rag.train_queries.device()));

  std::vector<double> lambdas;
  for (int i = 0; i <= 10; ++i) lambdas.push_back(i / 10.0);
  if (std::find(lambdas.begin(), lambdas.end(), rag.lambda) == lambdas.end()) lambdas.push_back(rag.lambda);
  std::sort(lambdas.begin(), lambdas.end());
  const std::vector<RankedPredictions> ranked = rank_with_retrieval_at(queries, label_matrix, others, lambdas, 5);
  HeldOutWeightChoice choice(lambdas);
  std::vector<std::vector<double>> per_query(lambdas.size());
  for (std::size_t i = 0; i < lambdas.size(); ++i) {
    const torch::Tensor ids = ranked[i].labels.contiguous();
    const auto* id = ids.data_ptr<std::int64_t>();
    for (std::int64_t r = 0; r < ids.size(0); ++r) {
      per_query[i].push_back(precision_1_3_5({id + r * ids.size(1), static_cast<std::size_t>(ids.size(1))}, truth.row_indices(r)));
      choice.add_score(i, per_query[i].back());
    }
  }
  choice.add_queries(static_cast<std::int64_t>(held.size()));
  RagLambdaChoice out{.lambda = choice.best(rag.lambda), .queries = static_cast<std::int64_t>(held.size()), .curve = choice.curve(2)};
  // A λ other than the configured one must beat it by more than the noise of so few queries.
  const auto at = [&](double lambda) { return static_cast<std::size_t>(std::find(lambdas.begin(), lambdas.end(), lambda) - lambdas.begin()); };
  if (out.lambda != rag.lambda && !beats_by_a_standard_error(per_query[at(out.lambda)], per_query[at(rag.lambda)])) {
    out.best = out.lambda;
    out.lambda = rag.lambda;
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
