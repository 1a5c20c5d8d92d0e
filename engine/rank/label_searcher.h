#pragma once
// Engine-internal (includes torch). One way to rank labels for queries, whatever does the ranking; FAISS's Index is
// the model. Searchers over a label matrix (exact in place, or through an index made from a spec: index_factory.h),
// over xrlinear's tree of rankers, and wrappers in FAISS's manner: a subset of label ids (IndexIDMap) and retrieval
// augmentation over another searcher's labels (RAG). make_mode_searcher() makes an inference mode's searcher; the
// Predictor and the evaluation rank through searchers and never ask which kind they hold.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/method/label_ranking.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

/// A block of queries as a searcher reads them: rows [begin, end) of their tokens, and those rows' vectors under
/// the searcher's query encoder (a searcher without one reads the tokens alone).
struct SearchQueries {
  const TokenizedCorpus* texts = nullptr;
  std::int64_t begin = 0, end = 0;
  torch::Tensor vectors;  ///< [rows x d]; undefined for a searcher that reads the texts
  std::int64_t rows() const { return vectors.defined() ? vectors.size(0) : end - begin; }
};

/// Where a label ranks for one query: rank 1 = best, 0 = it gets no score; its score.
struct LabelPlace {
  std::int64_t rank = 0;
  float score = 0;
};

class LabelSearcher {
 public:
  virtual ~LabelSearcher() = default;

  /// The query encoder (InferenceMode::query_encoder) whose vectors it searches; "" when it reads the texts.
  virtual const std::string& query_encoder() const = 0;
  /// How many labels it ranks.
  virtual std::int64_t num_labels() const = 0;
  /// Whether it ranks `label` (an id of the run's label space).
  virtual bool ranks(std::int64_t label) const { return label >= 0 && label < num_labels(); }
  /// The `k` best labels of each query row, best first, equal scores by lower id: [rows x min(k, num_labels())] ids
  /// of the run's label space and their scores, on the CPU, -1 padded where fewer were found.
  virtual RankedPredictions search(const SearchQueries& queries, std::int64_t k) const = 0;
  /// Where each of `labels` is for the one query of `query` (rank 0 for a label it does not rank), by exact scores
  /// whatever index searches.
  virtual std::vector<LabelPlace> places_of(const SearchQueries& query, const std::vector<std::int64_t>& labels) const;
  /// The label vectors it scores by, one row per label it ranks, in its order (undefined when it reads texts).
  virtual torch::Tensor label_vectors() const { return {}; }
  /// Whether it scores every label by its vector alone, so that retrieval augmentation can build on it.
  virtual bool searches_every_label_vector() const { return false; }
  /// Takes new labels, the run's `first_label` on, one row of `vectors` each. Throws Error when it cannot.
  virtual void add(const torch::Tensor& vectors, std::int64_t first_label) = 0;
};

}  // namespace xmc
