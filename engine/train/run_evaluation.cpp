#include "engine/train/run_evaluation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/eval/decile_bins.h"
#include "engine/eval/metric_key.h"
#include "engine/text/corpus_rows.h"
#include "engine/train/shared_candidate_evaluation.h"

namespace xmc {
namespace {

std::string two_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

/// The log line of how `mode` searched its labels ("" when it searched exactly as asked).
std::string search_line(const InferenceMode& mode, const EvalResult& result, const EvaluationSetup& setup) {
  char calibrated[160] = "";
  if (result.calibration_queries > 0)
    std::snprintf(calibrated, sizeof calibrated, "%s probe %lld of %lld cluster%s kept %.3f of the exact top 10 on %lld test queries",
                  result.search_fell_back_to_exact ? "the inverted file's" : "at", static_cast<long long>(result.search_probe),
                  static_cast<long long>(result.search_clusters), result.search_clusters == 1 ? "" : "s", result.calibration_recall_at_10,
                  static_cast<long long>(result.calibration_queries));
  if (result.search_fell_back_to_exact)
    return "evaluation (" + mode.name + "): exact search: " + calibrated + ", under " + two_decimals(setup.recall_target);
  if (result.search_recall_queries == 0) return {};
  char recall[32];
  std::snprintf(recall, sizeof recall, "%.3f", result.search_recall_at_10);
  std::string searched = setup.index + " search";
  if (const std::vector<std::string>& from = mode.candidates_from; !from.empty()) {
    searched = "the top " + std::to_string(kCandidatesPerIndex) + " candidates of " + setup.index + " searches of ";
    for (std::size_t i = 0; i < from.size(); ++i) searched += (i == 0 ? "" : i + 1 == from.size() ? " and " : ", ") + from[i];
    searched += ", ranked exactly";
  }
  return "evaluation (" + mode.name + "): " + searched + (result.calibration_queries > 0 ? std::string(" ") + calibrated + ";" : std::string(",")) +
         " recall@10 " + recall + " against exact on " + std::to_string(result.search_recall_queries) + " sampled test queries";
}

}  // namespace

/// Every stride-th test query, its truth and filter rows: what evaluations before the last rank with
/// eval.max_queries (made once; its setup points into it).
struct RunEvaluation::TestSample {
  TokenizedCorpus corpus;
  CsrMatrix truth;
  FilterPairs filter;
  EvaluationSetup setup;
  TestSample(const TokenizedCorpus& queries, const EvaluationSetup& full, std::int64_t most) : setup(full) {
    const std::int64_t stride = (queries.size() + most - 1) / most;
    truth.cols = full.truth->cols;
    std::vector<FilterPair> pairs;
    std::vector<std::int64_t> rows;
    for (std::int64_t row = 0; row < queries.size(); row += stride) {
      rows.push_back(row);
      truth.append_row(full.truth->row_indices(row), full.truth->row_values(row));
    }
    corpus = corpus_rows(queries, rows);
    for (const FilterPair& p : full.filter->pairs())
      if (p.row % stride == 0) pairs.push_back({p.row / stride, p.label});
    filter = FilterPairs(std::move(pairs));
    setup.truth = &truth;
    setup.filter = &filter;
  }
};

std::vector<std::pair<std::string, EvalResult>> RunEvaluationResult::named_results() const {
  std::vector<std::pair<std::string, EvalResult>> out;
  for (std::size_t m = 0; m < evaluation.modes.size(); ++m) out.emplace_back(evaluation.modes[m].name, evaluation.results[m]);
  return out;
}

RunEvaluation::RunEvaluation(const Dataset& dataset, const TrainConfig& config, std::vector<std::int64_t> held_out_rows, const Phase& phase)
    : dataset_(dataset), max_queries_(config.eval_max_queries), rag_(config.get<RagOptions>()), held_out_rows_(std::move(held_out_rows)) {
  if (rag_.use == "on" && rag_.lambda_from == "held-out" && held_out_rows_.empty())
    throw ConfigError("rag.lambda_from: held-out, but " + config.method +
                      " holds no training queries out: hold some out (holdout.share for dexml and ngame, unidec.concat_holdout for unidec)");
  setup_.truth = &dataset.test_labels;
  setup_.filter = &dataset.test_filter;
  setup_.inv_propensities = dataset.inverse_propensities();
  setup_.bins = decile_bins(dataset.label_frequencies());
  setup_.ks = config.eval_k;
  setup_.top = config.eval_top;
  check_eval_index(config.eval_index);
  setup_.index = resolved_eval_index(config.eval_index, dataset.num_labels(), config.eval_approximate_above);
  if (config.eval_index == "auto" && setup_.index != "exact") {
    // The automatic choice keeps its promise: each evaluation tunes the probe to the fewest clusters that keep
    // kAutoEvalRecallTarget of the exact top 10 (engine/index/probe_tuning.h), or searches exactly.
    setup_.recall_target = kAutoEvalRecallTarget;
    phase("evaluations search the labels through an inverted file (" + setup_.index + "; eval.index auto: " + std::to_string(dataset.num_labels()) +
          " labels, from eval.approximate_above " + std::to_string(config.eval_approximate_above) + "), its probe tuned to the fewest clusters that keep " +
          two_decimals(kAutoEvalRecallTarget) + " of the exact top 10 (exact search when half the clusters do not), the recall logged");
  }
}

RunEvaluation::~RunEvaluation() = default;

RunEvaluationResult RunEvaluation::evaluate(LabelRanking& ranking, const TokenizedCorpus& test_queries, const TokenizedCorpus& labels,
                                            const TokenizedCorpus& train_queries, bool final, bool rank_all, double epoch, Progress& progress,
                                            const Phase& phase) {
  phase("evaluating");
  const auto started = std::chrono::steady_clock::now();
  const RagSource rag{.train_queries = &train_queries,
                      .train_labels = &dataset_.train_labels,
                      .top = rag_.top,
                      .lambda = rag_.lambda,
                      .temperature = rag_.temperature,
                      .held_out_rows = rag_.lambda_from == "held-out" ? &held_out_rows_ : nullptr};
  // Before the last evaluation, eval.max_queries ranks an even sample of the test queries.
  const bool sampled = !final && !rank_all && max_queries_ > 0 && test_queries.size() > max_queries_;
  if (sampled) {
    if (!sample_) sample_ = std::make_unique<TestSample>(test_queries, setup_, max_queries_);
    phase("evaluating on an even sample of " + std::to_string(sample_->corpus.size()) + " of " + std::to_string(test_queries.size()) +
          " test queries (eval.max_queries; the last evaluation ranks them all)");
  }
  RunEvaluationResult out;
  out.evaluation = evaluate_modes(ranking, sampled ? sample_->corpus : test_queries, labels, sampled ? sample_->setup : setup_, progress,
                                  rag_.use == "on" ? &rag : nullptr);
  const ModeEvaluation& evaluation = out.evaluation;
  if (const auto& choice = evaluation.rag_lambda) {
    phase("rag.lambda: " + two_decimals(choice->lambda) + (choice->best >= 0 ? " kept (the best, " + two_decimals(choice->best) + ", did not beat it by a standard error)" : " chosen") +
          " on " + std::to_string(choice->queries) + " held-out training queries by P@1 + P@3 + P@5: " + choice->curve);
    if (choice->lambda != last_rag_lambda_) out.chosen.emplace_back("rag.lambda", choice->lambda);
    last_rag_lambda_ = choice->lambda;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (std::size_t m = 0; m < evaluation.modes.size(); ++m)
    if (const std::string line = search_line(evaluation.modes[m], evaluation.results[m], setup_); !line.empty()) phase(line);
  const EvalResult& primary = evaluation.results.front();
  TrainEvent& e = out.event;
  e.kind = TrainEvent::Kind::Evaluation;
  e.epoch = epoch;
  e.seconds = seconds;
  e.metrics = primary.metrics;
  // Every mode under its prefix, the primary's too: the primary can change within a run (NGAME's embedding
  // in M1, fused ranking from M4), and its curve is that mode's, not the plain names' (evaluation_modes.h).
  for (std::size_t m = 0; m < evaluation.modes.size(); ++m)
    for (const auto& [name, value] : evaluation.results[m].metrics) {
      MetricKey key = MetricKey::parse(name);
      key.mode = evaluation.modes[m].metric_prefix;
      if (!key.mode.empty()) e.mode_metrics.emplace_back(key.str(), value);
    }
  for (const auto& [name, bars] : primary.deciles) e.decile_tables.emplace_back(name, std::vector<double>(bars.begin(), bars.end()));
  if (auto it = primary.deciles.find("P@5"); it != primary.deciles.end()) e.deciles = it->second;
  const auto training_space =
      std::find_if(evaluation.modes.begin(), evaluation.modes.end(), [](const InferenceMode& mode) { return mode.training_space; });
  if (training_space != evaluation.modes.end()) {
    out.training_space = static_cast<std::size_t>(training_space - evaluation.modes.begin());
    const ScoreSpread spread = score_spread(evaluation.queries.at(training_space->query_encoder), training_space->label_matrix);
    e.score_spread = spread.spread;
    e.score_mean = spread.mean;
  }
  return out;
}

}  // namespace xmc
