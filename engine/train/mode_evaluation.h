#pragma once
// Engine-internal (includes torch). Evaluation of every inference mode a method has now: test queries
// are encoded once per query encoder (a memory-budgeted slice at a time), each mode's label matrix is ranked
// (filter pairs removed) and scored with the metrics of engine/eval. The trainer evaluates through it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/method/label_ranking.h"
#include "engine/rank/retrieval_augmented_search.h"
#include "engine/train/evaluation_pass.h"

namespace xmc {

struct ModeEvaluation {
  std::vector<InferenceMode> modes;  ///< the method's modes, primary first
  std::vector<EvalResult> results;   ///< one per mode
  /// Test query embeddings per query encoder: every row for an encoder whose whole matrix a mode needs (a subset
  /// mode, rag), else the first (up to 1024) rows: the others were encoded and ranked a slice at a time.
  std::map<std::string, torch::Tensor> queries;
  std::optional<RagLambdaChoice> rag_lambda;  ///< with rag.lambda_from held-out: the λ mode rag ranked with, and why
};

/// How far apart the scores of queries over all labels are in `mode`: the mean over (up to 1024) test
/// queries of the standard deviation of their label scores, and the mean score. A spread near zero with
/// a mean near one means the embeddings collapsed (every label scores alike for every query). The scores are
/// made `label_chunk` labels at a time (0: as many as fit the memory budget's share), their moments merged exactly, so
/// memory does not grow with the label count (all 1.3M labels' scores at once took 16 GB).
struct ScoreSpread {
  double spread = 0;
  double mean = 0;
};
ScoreSpread score_spread(const torch::Tensor& queries, const torch::Tensor& label_matrix, std::int64_t label_chunk = 0);

/// What the retrieval-augmented mode `rag` (engine/rank/retrieval_augmented_search.h) retrieves from besides the labels: the
/// training queries, encoded by the query encoder of the method's training-space mode, and their labels.
struct RagSource {
  const TokenizedCorpus* train_queries = nullptr;
  const CsrMatrix* train_labels = nullptr;
  std::int64_t top = 100;
  double lambda = 0.9;
  double temperature = 0.05;
  /// With rag.lambda_from held-out: the training queries the method held out, on which λ is chosen (null: λ as given).
  const std::vector<std::int64_t>* held_out_rows = nullptr;
};

/// Every mode of `ranking`, primary first; with `rag`, the mode "rag" (metrics "rag/...") after them, built on
/// the mode training scores in (its queries and label matrix).
ModeEvaluation evaluate_modes(LabelRanking& ranking, const TokenizedCorpus& test_queries, const TokenizedCorpus& labels, const EvaluationSetup& setup,
                              Progress& progress = silent_progress(), const RagSource* rag = nullptr);

}  // namespace xmc
