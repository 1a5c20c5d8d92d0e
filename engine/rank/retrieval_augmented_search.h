#pragma once
// Engine-internal (includes torch). Retrieval-augmented ranking (ViXML, appendix E): for a query q, the `top`
// labels nearest it (scores q·l) and the `top` training queries nearest it (scores q·q'), one joint list of
// 2·top scores, softmax(score / T) over it; a label then scores
//   λ · p(its own entry, if retrieved) + (1 − λ) · Σ p(neighbour q') over the retrieved neighbours q' it is a positive of,
// and labels are ranked by that. The neighbours carry what training said about queries like this one; λ keeps
// the labels' own similarity in charge. Exact search over both sets.
#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/data/filter_pairs.h"
#include "engine/rank/label_searcher.h"

namespace xmc {

struct RetrievalAugmentation {
  torch::Tensor train_queries;              ///< [N × d], the same space as the queries and labels searched
  const CsrMatrix* train_labels = nullptr;  ///< the positives of each training query (N rows)
  std::int64_t top = 100;
  double lambda = 0.9;
  double temperature = 0.05;
};

/// The `top` best labels of each of `queries` [n × d] against `label_matrix` [L × d] by the augmented score,
/// best first (−1 past the end when fewer labels got any score), without the pairs `filter` holds for rows
/// row_offset + r. Throws ConfigError when train_labels' rows do not match train_queries'.
RankedPredictions rank_with_retrieval(const torch::Tensor& queries, const torch::Tensor& label_matrix, const RetrievalAugmentation& rag,
                                      std::int64_t top, const FilterPairs* filter = nullptr, std::int64_t row_offset = 0);

/// rank_with_retrieval() at each of `lambdas` (one ranking each), the products and softmax made once.
std::vector<RankedPredictions> rank_with_retrieval_at(const torch::Tensor& queries, const torch::Tensor& label_matrix, const RetrievalAugmentation& rag,
                                                      std::span<const double> lambdas, std::int64_t top, const FilterPairs* filter = nullptr,
                                                      std::int64_t row_offset = 0);

/// λ chosen on training queries held out of training (rag.lambda_from: held-out).
struct RagLambdaChoice {
  double lambda = 0.9;       ///< the λ to rank with
  std::int64_t queries = 0;  ///< held-out queries it was chosen on
  std::string curve;         ///< every λ tried with its mean P@1 + P@3 + P@5 on them
  double best = -1;          ///< when the configured λ was kept: the best mean's λ, which did not beat it by a standard error
};

/// Chooses RAG's λ on `held_out_rows` of rag.train_queries (at most 5,000 of them, evenly spaced): each is ranked
/// against `label_matrix` and the other training queries (never itself) at λ = 0, 0.1, ..., 1 and the configured
/// rag.lambda, scored by P@1 + P@3 + P@5 against its own labels; the best mean wins when it beats the configured λ by
/// more than one standard error of the paired difference (beats_by_a_standard_error), else the configured λ stays.
RagLambdaChoice choose_rag_lambda(const RetrievalAugmentation& rag, std::span<const std::int64_t> held_out_rows, const torch::Tensor& label_matrix);

/// The augmented ranking as a searcher: the labels of `labels` (a searcher of every label vector: its label
/// vectors are read at each search, so labels added to it are ranked too), for query vectors of its encoder.
class RetrievalAugmentedSearcher final : public LabelSearcher {
 public:
  /// Throws Error when `labels` does not score every label by its vector (a subset's, a tree's).
  RetrievalAugmentedSearcher(const LabelSearcher& labels, RetrievalAugmentation rag);

  const std::string& query_encoder() const override { return labels_.query_encoder(); }
  std::int64_t num_labels() const override { return labels_.num_labels(); }
  RankedPredictions search(const SearchQueries& queries, std::int64_t k) const override;
  torch::Tensor label_vectors() const override { return labels_.label_vectors(); }
  /// Nothing of its own: the searcher it augments takes them.
  void add(const torch::Tensor& /*vectors*/, std::int64_t /*first_label*/) override {}

 private:
  /// The labels' vectors as the ranking reads them (CPU, float), copied again only when labels were added.
  const torch::Tensor& cpu_labels() const;

  const LabelSearcher& labels_;
  RetrievalAugmentation rag_;  ///< its training queries made CPU float once, not at every block of queries
  mutable torch::Tensor cpu_labels_;
};

}  // namespace xmc
