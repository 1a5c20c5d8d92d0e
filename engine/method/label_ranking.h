#pragma once
// Engine-internal (includes torch). What a method is to evaluation and search: its inference modes (label
// matrices and the query encoders that search them) and the vectors of labels it never saw. The evaluator
// (engine/train/mode_evaluation.h) and the Predictor use a method through this interface alone.
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/filter_pairs.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

/// What a mode is scored on when it is not every test row against every label (IRENE's zero-shot setting:
/// the test rows with a novel positive, against the novel labels only).
struct EvaluationSubset {
  std::vector<std::int64_t> query_rows;  ///< test rows scored, in order
  CsrMatrix truth;                       ///< [query_rows x label_matrix rows]
  FilterPairs filter;                    ///< pairs never to predict, in these coordinates
  std::vector<std::int64_t> label_ids;   ///< the dataset label of each label_matrix row
};

/// Ranked predictions of each query: [n x top] label ids (-1 past the end) and scores.
struct RankedPredictions {
  torch::Tensor labels;  ///< int64, CPU
  torch::Tensor scores;  ///< float32, CPU
};

/// A mode that ranks queries itself, from their tokens, rather than by inner products with a label matrix
/// (xrlinear's beam search down a label tree).
class QueryRanker {
 public:
  virtual ~QueryRanker() = default;
  /// The `top` best labels of rows [begin, end) of `queries` (tokenized by the method's tokenizer), best first,
  /// unfiltered; fewer than `top` found are padded with -1.
  virtual RankedPredictions rank(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end, std::int64_t top) const = 0;
  virtual std::int64_t num_labels() const = 0;
};

/// One way of ranking labels for a query: a label matrix searched with a query encoder, or a QueryRanker.
struct InferenceMode {
  std::string name;           ///< "embedding", "classifier", "fused"
  std::string metric_prefix;  ///< stored metrics of a non-primary mode are "<prefix>/P@5" ("emb/P@5")
  std::string query_encoder;  ///< which encode_queries() output searches it (modes may share one)
  torch::Tensor label_matrix; ///< [L x d]
  /// The space training steps score in (the t-SNE of a query's negatives is drawn in it).
  bool training_space = false;
  /// Set when the mode ranks a subset of the labels for a subset of the test rows; null = all of both.
  std::shared_ptr<const EvaluationSubset> subset;
  /// Set when the mode ranks by itself: label_matrix and query_encoder are then unused (and empty).
  std::shared_ptr<const QueryRanker> ranker;
  /// Under an approximate evaluation index: the modes (by name; this one may be among them) whose index searches
  /// propose this mode's candidates, which it ranks exactly by its own label matrix (shared_candidate_evaluation.h).
  /// Every mode naming the same list ranks the same labels and is evaluated with them. Empty: an index of its own.
  std::vector<std::string> candidates_from;

  /// Whether it scores every label for every query by the inner products of its label matrix (another run can fuse
  /// with it, or retrieval augmentation build on it). How each kind of mode ranks is engine/rank's to say.
  bool scores_every_label_by_vector() const { return !ranker && !subset && label_matrix.defined(); }
};

/// Ranking labels for queries, in each inference mode.
class LabelRanking {
 public:
  virtual ~LabelRanking() = default;

  /// Embeds rows of `corpus` as queries for `query_encoder` (an InferenceMode's), without graph.
  virtual torch::Tensor encode_queries(const std::string& query_encoder, const TokenizedCorpus& corpus, Progress& progress,
                                       std::string_view task) = 0;
  /// encode_queries() for each of `query_encoders` (distinct names) over one corpus. A method whose query
  /// encoders share work (one encoder pass under several heads) overrides it to do that work once.
  virtual std::map<std::string, torch::Tensor> encode_queries_for(const std::vector<std::string>& query_encoders, const TokenizedCorpus& corpus,
                                                                  Progress& progress, std::string_view task) {
    std::map<std::string, torch::Tensor> out;
    for (const std::string& name : query_encoders) out.emplace(name, encode_queries(name, corpus, progress, task));
    return out;
  }
  /// The same for a few rows (a t-SNE snapshot's query), without graph, in eval mode.
  virtual torch::Tensor encode_query_rows(const std::string& query_encoder, const TokenizedCorpus& corpus,
                                          std::span<const std::int64_t> rows) = 0;
  /// The inference modes available now (they may change as stages finish); the first is the primary
  /// mode, whose metrics are stored unprefixed and shown by default.
  virtual std::vector<InferenceMode> inference_modes(const TokenizedCorpus& labels, Progress& progress) = 0;
  /// Label vectors for labels the run never saw (zero-shot, from their texts), one [n x d] matrix per
  /// mode of inference_modes(), in the same order.
  virtual std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus& texts) = 0;
  /// The same with the classifiers of the new labels given ([n x d] in the method's classifier mode, e.g.
  /// synthesized by IRENE): modes that rank by classifiers use them. Methods without classifiers ignore them.
  virtual std::vector<torch::Tensor> new_label_vectors_with_classifiers(const TokenizedCorpus& texts, const torch::Tensor& /*classifiers*/) {
    return new_label_vectors(texts);
  }
};

}  // namespace xmc
