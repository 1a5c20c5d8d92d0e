#pragma once
// Engine-internal (includes torch). A training run's evaluations on its test set: the setup made once from the
// dataset and the run's evaluation keys (cut-offs, the label index and the recall the automatic choice keeps,
// the even sample of test queries that evaluations before the last rank with eval.max_queries, RAG's source),
// and each evaluation: every inference mode ranked, the searches' recall logged, the Evaluation event made.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/index/rag_options.h"
#include "engine/records/train_events.h"
#include "engine/train/mode_evaluation.h"

namespace xmc {

struct Dataset;
struct TrainConfig;

struct RunEvaluationResult {
  TrainEvent event;  ///< kind Evaluation: the primary mode's metrics and deciles, every mode's under its prefix
  ModeEvaluation evaluation;
  std::optional<std::size_t> training_space;  ///< the mode training scores in, when the method has one
  const EvalResult& primary() const { return evaluation.results.front(); }
  /// Every mode's name and result, primary first.
  std::vector<std::pair<std::string, EvalResult>> named_results() const;
  /// Config values this evaluation chose for itself where they differ from the last evaluation's (rag.lambda with
  /// rag.lambda_from held-out): the trainer records them as the run's chosen settings.
  std::vector<std::pair<std::string, double>> chosen;
};

class RunEvaluation {
 public:
  using Phase = std::function<void(const std::string&)>;

  /// Reads the test truth, filter, propensities and label frequencies of `dataset` (held by reference: it outlives
  /// this), and says in `phase` how an automatic index searches. `held_out_rows`: the training queries the method
  /// holds out (rag.lambda_from held-out chooses λ on them). Throws ConfigError for a bad eval.index, or for
  /// rag.lambda_from held-out without held-out rows.
  RunEvaluation(const Dataset& dataset, const TrainConfig& config, std::vector<std::int64_t> held_out_rows, const Phase& phase);
  ~RunEvaluation();

  /// Ranks `test_queries` (all of them when `final` or `rank_all`, else eval.max_queries' sample) in every mode of
  /// `ranking`; `train_queries` feeds the retrieval-augmented mode when rag.use is on. The event's epoch is `epoch`.
  RunEvaluationResult evaluate(LabelRanking& ranking, const TokenizedCorpus& test_queries, const TokenizedCorpus& labels,
                               const TokenizedCorpus& train_queries, bool final, bool rank_all, double epoch, Progress& progress,
                               const Phase& phase);

 private:
  struct TestSample;
  const Dataset& dataset_;
  EvaluationSetup setup_;
  std::int64_t max_queries_ = 0;
  RagOptions rag_;
  std::vector<std::int64_t> held_out_rows_;
  double last_rag_lambda_ = -1;         ///< the λ the last evaluation chose (-1: none yet)
  std::unique_ptr<TestSample> sample_;  ///< made at the first sampled evaluation
};

}  // namespace xmc
