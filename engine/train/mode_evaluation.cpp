#include "engine/train/mode_evaluation.h"

#include <algorithm>
#include <map>
#include <memory>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/text/corpus_rows.h"
#include "engine/rank/mode_ranking_plan.h"
#include "engine/rank/mode_searcher.h"
#include "engine/rank/retrieval_augmented_search.h"
#include "engine/train/shared_candidate_evaluation.h"

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

namespace {

/// Test queries encoded and ranked at a time: as many as the memory budget's part holds of every streamed
/// encoder's embeddings (`floats_per_query`), in whole chunks of the encoders' 1024 rows, at least one.
std::int64_t test_query_slice(std::int64_t floats_per_query) {
  constexpr std::int64_t kEncoderChunk = 1024;
  const std::int64_t rows = memory_budget_part(memory_share::kEvaluationQueries) / (static_cast<std::int64_t>(sizeof(float)) * std::max<std::int64_t>(1, floats_per_query));
  return std::max<std::int64_t>(1, rows / kEncoderChunk) * kEncoderChunk;
}

}  // namespace

namespace {

/// The streamed modes of one pass, ranked as the test queries stream a slice at a time: each slice is encoded once
/// for all the pass's query encoders and ranked by each mode (or, with shared candidates, by the pass together).
void rank_streamed_pass(LabelRanking& ranking, const TokenizedCorpus& test_queries, const EvaluationSetup& setup, Progress& reporter,
                        const ModeRankingPlan::Pass& pass, ModeEvaluation& out) {
  std::vector<std::unique_ptr<RankingEvaluation>> evaluations;
  std::unique_ptr<SharedCandidateEvaluation> shared;
  std::vector<std::string> encoders;
  std::string names;
  std::int64_t floats_per_query = 0;
  std::vector<torch::Tensor> label_matrices;
  for (const std::size_t m : pass.modes) {
    const InferenceMode& mode = out.modes[m];
    if (!pass.shared_candidates) evaluations.push_back(std::make_unique<RankingEvaluation>(mode.label_matrix, setup));
    label_matrices.push_back(mode.label_matrix);
    names += (names.empty() ? "" : ", ") + mode.name;
    if (std::find(encoders.begin(), encoders.end(), mode.query_encoder) == encoders.end()) {
      encoders.push_back(mode.query_encoder);
      floats_per_query += mode.label_matrix.size(1);
    }
  }
  if (pass.shared_candidates) {
    std::vector<std::size_t> proposers;  // the plan checked that each is in the pass
    for (const std::string& name : out.modes[pass.modes.front()].candidates_from)
      proposers.push_back(static_cast<std::size_t>(
          std::find_if(pass.modes.begin(), pass.modes.end(), [&](std::size_t m) { return out.modes[m].name == name; }) - pass.modes.begin()));
    shared = std::make_unique<SharedCandidateEvaluation>(label_matrices, proposers, setup);
  }
  label_matrices.clear();
  const std::int64_t n = test_queries.size();
  const std::int64_t slice = test_query_slice(floats_per_query);
  reporter.start(out.modes.size() == 1 ? "encoding and ranking test queries" : "encoding and ranking test queries (" + names + ")", n);
  for (std::int64_t first = 0; first < n; first += slice) {
    if (reporter.cancelled()) throw Cancelled();
    const std::int64_t rows = std::min(slice, n - first);
    const std::map<std::string, torch::Tensor> part = ranking.encode_queries_for(encoders, corpus_rows(test_queries, first, first + rows), silent_progress(), {});
    std::vector<torch::Tensor> per_mode;
    for (const std::size_t m : pass.modes) {
      const auto it = part.find(out.modes[m].query_encoder);
      if (it == part.end()) throw Error("evaluation: the method encoded no test queries for \"" + out.modes[m].query_encoder + "\"");
      per_mode.push_back(it->second);
    }
    if (shared) shared->add(per_mode, first);
    for (std::size_t i = 0; i < evaluations.size(); ++i) evaluations[i]->add(per_mode[i], first);
    // The first rows stay, for the score spread of the training space (score_spread reads up to 1024).
    if (first == 0)
      for (const auto& [name, embedded] : part)
        if (out.queries.count(name) == 0) out.queries.emplace(name, embedded.narrow(0, 0, std::min<std::int64_t>(rows, 1024)).clone());
    reporter.update(first + rows);
  }
  reporter.finish();
  std::vector<EvalResult> results;
  if (shared) results = shared->results();
  for (const auto& evaluation : evaluations) results.push_back(evaluation->result());
  for (std::size_t i = 0; i < pass.modes.size(); ++i) out.results[pass.modes[i]] = std::move(results[i]);
}

/// A mode ranking a subset of the test rows against a subset of the labels: its own truth and filter; propensities
/// and decile bins follow the labels its matrix rows are.
EvalResult rank_row_subset(const InferenceMode& mode, const torch::Tensor& queries, const EvaluationSetup& setup, Progress& reporter, const std::string& task) {
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
  const torch::Tensor rows = torch::tensor(subset.query_rows, torch::kInt64).to(queries.device());
  return evaluate_ranking(queries.index_select(0, rows), mode.label_matrix, own, reporter, task);
}

const torch::Tensor& encoded_whole(const ModeEvaluation& out, const std::string& query_encoder) {
  const auto it = out.queries.find(query_encoder);
  if (it == out.queries.end()) throw Error("evaluation: the method encoded no test queries for \"" + query_encoder + "\"");
  return it->second;
}

}  // namespace

ModeEvaluation evaluate_modes(LabelRanking& ranking, const TokenizedCorpus& test_queries, const TokenizedCorpus& labels, const EvaluationSetup& setup,
                              Progress& progress, const RagSource* rag) {
  EvaluationProgress reporter(progress);
  ModeEvaluation out;
  out.modes = ranking.inference_modes(labels, reporter);
  out.results.resize(out.modes.size());
  const ModeRankingPlan plan = plan_mode_ranking(out.modes, setup.index != "exact", rag != nullptr);
  if (!plan.whole_encoders.empty()) out.queries = ranking.encode_queries_for(plan.whole_encoders, test_queries, reporter, "encoding test queries");
  for (const ModeRankingPlan::Pass& pass : plan.streamed_passes) rank_streamed_pass(ranking, test_queries, setup, reporter, pass, out);
  std::vector<std::string> unseen;  // no test queries at all: the encoders' empty matrices stand in
  for (const std::string& name : plan.streamed_encoders)
    if (out.queries.count(name) == 0) unseen.push_back(name);
  if (!unseen.empty())
    for (auto& [name, embedded] : ranking.encode_queries_for(unseen, corpus_rows(test_queries, 0, 0), silent_progress(), {}))
      out.queries.emplace(name, std::move(embedded));

  const auto task = [&](std::size_t m) { return out.modes.size() == 1 ? std::string("ranking test queries") : "ranking test queries (" + out.modes[m].name + ")"; };
  for (const std::size_t m : plan.by_searcher) out.results[m] = evaluate_searcher(*make_mode_searcher(out.modes[m]), test_queries, {}, setup, reporter, task(m));
  for (const std::size_t m : plan.on_whole_queries)
    out.results[m] = evaluate_ranking(encoded_whole(out, out.modes[m].query_encoder), out.modes[m].label_matrix, setup, reporter, task(m));
  for (const std::size_t m : plan.on_row_subsets) out.results[m] = rank_row_subset(out.modes[m], encoded_whole(out, out.modes[m].query_encoder), setup, reporter, task(m));

  if (plan.rag_base) {
    const InferenceMode& base_mode = out.modes[*plan.rag_base];
    InferenceMode mode{.name = "rag", .metric_prefix = "rag", .query_encoder = base_mode.query_encoder, .label_matrix = base_mode.label_matrix};
    const std::unique_ptr<LabelSearcher> base = make_mode_searcher(mode);
    RetrievalAugmentation augmentation{.train_queries = ranking.encode_queries(mode.query_encoder, *rag->train_queries, reporter, "encoding training queries (rag)"),
                                       .train_labels = rag->train_labels,
                                       .top = rag->top,
                                       .lambda = rag->lambda,
                                       .temperature = rag->temperature};
    if (rag->held_out_rows != nullptr && !rag->held_out_rows->empty()) {
      out.rag_lambda = choose_rag_lambda(augmentation, *rag->held_out_rows, mode.label_matrix);
      augmentation.lambda = out.rag_lambda->lambda;
    }
    const RetrievalAugmentedSearcher augmented(*base, std::move(augmentation));
    out.results.push_back(evaluate_searcher(augmented, test_queries, out.queries.at(mode.query_encoder), setup, reporter, "ranking test queries (rag)"));
    out.modes.push_back(std::move(mode));
  }
  return out;
}

ScoreSpread score_spread(const torch::Tensor& queries, const torch::Tensor& label_matrix, std::int64_t label_chunk) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = std::min<std::int64_t>(queries.size(0), 1024);
  const std::int64_t labels = label_matrix.size(0);
  if (n == 0 || labels < 2) return {};
  // A chunk of labels costs 12 n bytes a label at once: the float32 products and their float64 copy, whose
  // deviations are squared in place. (Sized for the float64 copy alone, with the deviations and their squares as
  // copies, it took three times its share: a 0.3 GB spike at the end of a 1.3M-label evaluation.)
  if (label_chunk <= 0) label_chunk = std::max<std::int64_t>(2, memory_budget_part(memory_share::kScoreSpread) / (12 * n));
  const torch::Tensor q = queries.narrow(0, 0, n);
  // Per query: the labels seen, the mean of their scores and the sum of squared deviations from it, merged chunk
  // by chunk (Chan et al.'s pairwise update), so the result is the one-pass std's up to rounding.
  double seen = 0;
  torch::Tensor mean, squares;
  for (std::int64_t first = 0; first < labels; first += label_chunk) {
    const std::int64_t width = std::min(label_chunk, labels - first);
    torch::Tensor scores = torch::matmul(q, label_matrix.narrow(0, first, width).t()).to(torch::kFloat64);
    const torch::Tensor chunk_mean = scores.mean(/*dim=*/1);
    const torch::Tensor chunk_squares = scores.sub_(chunk_mean.unsqueeze(1)).square_().sum(/*dim=*/1);
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
