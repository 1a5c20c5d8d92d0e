#include "engine/train/mode_evaluation.h"

#include <algorithm>
#include <map>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/train/retrieval_augmented_ranking.h"

namespace xmc {
namespace {

/// Names every task "evaluation: <task>", so the progress display says what the work is for.
class EvaluationProgress final : public Progress {
 public:
  explicit EvaluationProgress(Progress& target) : target_(target) {}
  void start(std::string_view task, std::int64_t total) override { target_.start("evaluation: " + std::string(task), total); }
  void update(std::int64_t done) override { target_.update(done); }
  void finish() override { target_.finish(); }
  bool cancelled() const override { return target_.cancelled(); }

 private:
  Progress& target_;
};

}  // namespace

ModeEvaluation evaluate_modes(LabelRanking& ranking, const TokenizedCorpus& test_queries, const TokenizedCorpus& labels, const EvaluationSetup& setup,
                              Progress& progress, const RagSource* rag) {
  EvaluationProgress reporter(progress);
  ModeEvaluation out;
  auto& queries = out.queries;  // query encoder -> [n x d]
  out.modes = ranking.inference_modes(labels, reporter);
  std::vector<std::string> encoders;  // each distinct query encoder once, in the modes' order
  for (const InferenceMode& mode : out.modes)
    if (!mode.ranker && std::find(encoders.begin(), encoders.end(), mode.query_encoder) == encoders.end()) encoders.push_back(mode.query_encoder);
  if (!encoders.empty()) queries = ranking.encode_queries_for(encoders, test_queries, reporter, "encoding test queries");
  for (const InferenceMode& mode : out.modes) {
    const std::string task = out.modes.size() == 1 ? "ranking test queries" : "ranking test queries (" + mode.name + ")";
    if (mode.ranker) {
      if (mode.subset) throw Error("evaluation: mode \"" + mode.name + "\" ranks by itself and cannot rank a subset");
      out.results.push_back(evaluate_query_ranker(*mode.ranker, test_queries, setup, reporter, task));
      continue;
    }
    const auto it = queries.find(mode.query_encoder);
    if (it == queries.end()) throw Error("evaluation: the method encoded no test queries for \"" + mode.query_encoder + "\"");
    if (!mode.subset) {
      out.results.push_back(evaluate_ranking(it->second, mode.label_matrix, setup, reporter, task));
      continue;
    }
    // A subset of rows against a subset of labels: its own truth and filter; propensities and decile bins
    // follow the labels the matrix rows are.
    const EvaluationSubset& subset = *mode.subset;
    EvaluationSetup own = setup;
    own.truth = &subset.truth;
    own.filter = &subset.filter;
    own.inv_propensities.clear();
    own.bins.clear();
    for (const std::int64_t label : subset.label_ids) {
      own.inv_propensities.push_back(setup.inv_propensities.at(static_cast<std::size_t>(label)));
      own.bins.push_back(setup.bins.at(static_cast<std::size_t>(label)));
    }
    const torch::Tensor rows = torch::tensor(subset.query_rows, torch::kInt64).to(it->second.device());
    out.results.push_back(evaluate_ranking(it->second.index_select(0, rows), mode.label_matrix, own, reporter, task));
  }
  if (rag != nullptr) {
    auto base = std::find_if(out.modes.begin(), out.modes.end(), [](const InferenceMode& mode) { return mode.training_space; });
    if (base == out.modes.end()) base = out.modes.begin();
    if (base != out.modes.end() && !base->subset && !base->ranker) {
      InferenceMode mode{.name = "rag", .metric_prefix = "rag", .query_encoder = base->query_encoder, .label_matrix = base->label_matrix};
      RetrievalAugmentation augmentation{.train_queries = ranking.encode_queries(base->query_encoder, *rag->train_queries, reporter,
                                                                                "encoding training queries (rag)"),
                                         .train_labels = rag->train_labels,
                                         .top = rag->top,
                                         .lambda = rag->lambda,
                                         .temperature = rag->temperature};
      out.results.push_back(evaluate_retrieval_ranking(queries.at(mode.query_encoder), mode.label_matrix, augmentation, setup, reporter,
                                                       "ranking test queries (rag)"));
      out.modes.push_back(std::move(mode));
    }
  }
  return out;
}

ScoreSpread score_spread(const torch::Tensor& queries, const torch::Tensor& label_matrix, std::int64_t label_chunk) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = std::min<std::int64_t>(queries.size(0), 1024);
  const std::int64_t labels = label_matrix.size(0);
  if (n == 0 || labels < 2) return {};
  // float64 scores of every query against a chunk of labels: 8 n bytes a label.
  if (label_chunk <= 0) label_chunk = std::max<std::int64_t>(2, memory_budget_part(memory_share::kScoreSpread) / (8 * n));
  const torch::Tensor q = queries.narrow(0, 0, n);
  // Per query: the labels seen, the mean of their scores and the sum of squared deviations from it, merged chunk
  // by chunk (Chan et al.'s pairwise update), so the result is the one-pass std's up to rounding.
  double seen = 0;
  torch::Tensor mean, squares;
  for (std::int64_t first = 0; first < labels; first += label_chunk) {
    const std::int64_t width = std::min(label_chunk, labels - first);
    const torch::Tensor scores = torch::matmul(q, label_matrix.narrow(0, first, width).t()).to(torch::kFloat64);
    const torch::Tensor chunk_mean = scores.mean(/*dim=*/1);
    const torch::Tensor chunk_squares = (scores - chunk_mean.unsqueeze(1)).square().sum(/*dim=*/1);
    if (seen == 0) {
      mean = chunk_mean;
      squares = chunk_squares;
    } else {
      const double total = seen + static_cast<double>(width);
      const torch::Tensor delta = chunk_mean - mean;
      mean = mean + delta * (static_cast<double>(width) / total);
      squares = squares + chunk_squares + delta.square() * (seen * static_cast<double>(width) / total);
    }
    seen += static_cast<double>(width);
  }
  const torch::Tensor std_per_query = (squares / (seen - 1)).sqrt();  // unbiased, as torch's std
  return {std_per_query.mean().item<double>(), mean.mean().item<double>()};
}

}  // namespace xmc
