// The method registry and the generic trainer's stage handling, seen from the outside: unknown methods
// are refused with the known ones listed; a run stopped inside any stage continues from its checkpoint
// to exactly the results of an uninterrupted run.
#include <gtest/gtest.h>

#include <set>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/dataset.h"
#include "engine/data/mulan_importer.h"
#include "engine/method/dexml/dexml_options.h"
#include "engine/method/method_registry.h"
#include "engine/optim/optim_options.h"
#include "engine/train/evaluation_pass.h"
#include "engine/train/mode_evaluation.h"
#include "engine/store/run_store.h"
#include "engine/text/corpus_rows.h"
#include "engine/train/training_run.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"
#include "engine/method/ngame/ngame_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

TEST(MethodRegistry, UnknownMethodIsRefusedWithTheKnownOnesListed) {
  TrainConfig config;
  config.method = "unidec-typo";
  try {
    make_method(component_config(config));
    FAIL() << "an unknown method was accepted";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unidec-typo"), std::string::npos) << message;
    for (const auto& m : registered_methods()) EXPECT_NE(message.find(m.name), std::string::npos) << message;
  }
}

TEST(MethodRegistry, EveryMethodDeclaresNamedStagesAndBuildsUnderItsName) {
  std::set<std::string> names;
  for (const auto& registration : registered_methods()) {
    EXPECT_TRUE(names.insert(registration.name).second) << "registered twice: " << registration.name;
    TrainConfig config;
    config.method = registration.name;
    const auto method = make_method(component_config(config));
    EXPECT_EQ(method->name(), registration.name);
    const auto stages = method->stages();
    ASSERT_FALSE(stages.empty()) << registration.name;
    std::set<std::string> stage_names;
    for (const auto& s : stages) {
      EXPECT_TRUE(stage_names.insert(s.name).second) << registration.name << " repeats stage " << s.name;
      EXPECT_GT(s.epochs, 0) << registration.name << "/" << s.name;
    }
  }
  EXPECT_TRUE(names.count("dexml") && names.count("ngame"));
}

// The reference script's job, piece by piece: no DE head (dexml.head normalize), and weight decay on every
// parameter (optim.decay all) rather than on weight matrices and tables alone.
TEST(MethodRegistry, DexmlsHeadAndWhatDecaysAreOptions) {
  test::TempDir dir;
  const std::vector<std::string> texts{"red apple", "green pear", "apple pie", "fruit"};
  for (const std::string head : {"tanh_linear", "normalize"}) {
    for (const std::string decay : {"weights", "all"}) {
      SCOPED_TRACE(head + ", " + decay);
      TrainConfig config;
      config.method = "dexml";
      config.weight_decay = 0.02;
      config.edit<EncoderOptions>().dim = 8;
      config.edit<DexmlOptions>().head = head;
      config.edit<OptimOptions>().decay = decay;
      const auto method = make_method(component_config(config));
      method->build(texts, dir / (head + decay));
      bool has_head = false;
      for (const auto& item : method->module().named_parameters()) has_head = has_head || item.key().rfind("de_head.", 0) == 0;
      EXPECT_EQ(has_head, head == "tanh_linear");
      std::size_t parameters = 0, decayed = 0;
      ASSERT_NE(method->gradient_steps(), nullptr);
      for (const ParameterGroup& group : method->gradient_steps()->parameter_groups(method->stages().front())) {
        parameters += group.parameters.size();
        if (group.weight_decay == 0.02) decayed += group.parameters.size();
      }
      EXPECT_EQ(parameters, method->module().parameters().size());
      if (decay == "all") EXPECT_EQ(decayed, parameters);
      else EXPECT_LT(decayed, parameters);  // biases (and the head) keep out of it
    }
  }
}

// How a method's stages train is one capability or the other: gradient steps for the dual encoders, fitting for the
// tree of linear rankers (no optimiser, no learning rate, no parameter groups).
TEST(MethodRegistry, AMethodTrainsByGradientStepsOrIsFitted) {
  for (const auto& [name, fitted] : std::vector<std::pair<std::string, bool>>{{"dexml", false}, {"ngame", false}, {"unidec", false}, {"xrlinear", true}}) {
    SCOPED_TRACE(name);
    TrainConfig config;
    config.method = name;
    const auto method = make_method(component_config(config));
    EXPECT_EQ(method->stage_fitting() != nullptr, fitted);
    EXPECT_EQ(method->gradient_steps() != nullptr, !fitted);
  }
}

TEST(MethodRegistry, NgameStagesFollowTheConfig) {
  TrainConfig config;
  config.method = "ngame";
  config.epochs = 4;
  config.edit<NgameOptions>().m4_epochs = 2;
  auto stages = make_method(component_config(config))->stages();
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].epochs, 4);
  EXPECT_EQ(stages[1].epochs, 2);
  EXPECT_EQ(stages[1].loss_series, "m4_loss");
  config.edit<NgameOptions>().m4_epochs = 0;  // encoder only
  EXPECT_EQ(make_method(component_config(config))->stages().size(), 1u);
}

TrainConfig ngame_config(const std::filesystem::path& data) {
  TrainConfig c;
  c.dataset = data;
  c.method = "ngame";
  c.edit<LossOptions>().kind = "triplet";
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().cluster_size = 4;
  c.edit<EncoderOptions>().dim = 16;
  c.batch_size = 32;
  c.epochs = 2;
  c.edit<NgameOptions>().m4_epochs = 2;
  c.lr = 0.01;
  c.threads = 1;
  c.seed = 3;
  c.eval_k = {1, 5};
  c.eval_top = 10;
  c.tsne_every = 0;
  return c;
}

/// Trains a run, stopping it after `stop_after` steps of stage `stop_stage` and resuming it until done;
/// returns the final metrics.
std::vector<std::pair<std::string, double>> train_with_stop(const std::filesystem::path& db, const TrainConfig& config,
                                                            const std::string& stop_stage, int stop_after) {
  std::int64_t id = 0;
  {
    TrainingRun run(config, db);
    id = run.run_id();
    int seen = 0;
    run.subscribe([&](const TrainEvent& e) {
      if (e.kind == TrainEvent::Kind::Step && e.stage == stop_stage && ++seen == stop_after) run.request_stop();
    });
    const TrainResult first = run.run();
    if (stop_after > 0) {
      EXPECT_EQ(first.outcome, RunOutcome::Stopped);
    }
    if (first.outcome == RunOutcome::Completed) return first.metrics.metrics;
  }
  EXPECT_EQ(RunStore(db).get_run(id).status, RunStatus::Stopped);
  TrainingRun resumed = TrainingRun::resume(id, db);
  const TrainResult result = resumed.run();
  EXPECT_EQ(result.outcome, RunOutcome::Completed);
  return result.metrics.metrics;
}

TEST(Trainer, StoppedInsideEitherNgameStageResumesToTheUninterruptedResult) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 9, 200, 60);
  const TrainConfig config = ngame_config(dir / "data");
  const auto straight = train_with_stop(dir / "a.sqlite", config, "", 0);
  const auto stopped_in_m1 = train_with_stop(dir / "b.sqlite", config, "m1", 3);
  const auto stopped_in_m4 = train_with_stop(dir / "c.sqlite", config, "m4", 9);  // in M4's second epoch
  // With the next batch prepared while a step trains: stopped with a prepared batch in hand, which the
  // resumed run draws again, it still ends where the plain run does.
  TrainConfig prefetching = config;
  prefetching.prefetch = "on";
  const auto prefetched_stopped_in_m1 = train_with_stop(dir / "d.sqlite", prefetching, "m1", 3);
  ASSERT_FALSE(straight.empty());
  EXPECT_EQ(stopped_in_m1, straight);
  EXPECT_EQ(stopped_in_m4, straight);
  EXPECT_EQ(prefetched_stopped_in_m1, straight);
  // The M4 losses of the resumed run continue the stage (no step recorded twice or lost).
  RunStore store(dir / "c.sqlite");
  const auto m4 = store.scalars(1, "m4_loss");
  const auto m4_straight = RunStore(dir / "a.sqlite").scalars(1, "m4_loss");
  ASSERT_EQ(m4.size(), m4_straight.size());
  for (std::size_t i = 0; i < m4.size(); ++i) {
    EXPECT_EQ(m4[i].step, m4_straight[i].step);
    EXPECT_DOUBLE_EQ(m4[i].value, m4_straight[i].value) << "step " << m4[i].step;
  }
}

TEST(CollapseSignal, SpreadIsTheMeanStdOfEachQuerysLabelScores) {
  // One query e1 against labels e1, e2, -e1: scores 1, 0, -1 -> std 1 (unbiased), mean 0.
  const auto healthy = score_spread(torch::tensor({{1.0f, 0.0f}}), torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {-1.0f, 0.0f}}));
  EXPECT_NEAR(healthy.spread, 1.0, 1e-6);
  EXPECT_NEAR(healthy.mean, 0.0, 1e-6);
  EXPECT_FALSE(embeddings_collapsed(healthy.spread, healthy.mean));
  // Every label on one direction: every score is 1.
  const auto collapsed = score_spread(torch::tensor({{0.6f, 0.8f}, {0.6f, 0.8f}}), torch::tensor({{0.6f, 0.8f}, {0.6f, 0.8f}}));
  EXPECT_NEAR(collapsed.spread, 0.0, 1e-6);
  EXPECT_NEAR(collapsed.mean, 1.0, 1e-6);
  EXPECT_TRUE(embeddings_collapsed(collapsed.spread, collapsed.mean));
  // Made a few labels at a time, the moments merge to those of all the scores at once (torch's own std and mean of
  // the whole score matrix, computed here directly); the float32 products differ by their rounding alone.
  torch::manual_seed(3);
  const torch::Tensor queries = torch::randn({5, 8}), labels = torch::randn({37, 8}) + 0.3;
  const torch::Tensor all = torch::matmul(queries, labels.t()).to(torch::kFloat64);
  const double want_spread = all.std(1).mean().item<double>(), want_mean = all.mean().item<double>();
  for (const std::int64_t chunk : {1, 2, 5, 36, 37, 100, 0}) {
    const auto chunked = score_spread(queries, labels, chunk);
    EXPECT_NEAR(chunked.spread, want_spread, 1e-6) << "chunks of " << chunk;
    EXPECT_NEAR(chunked.mean, want_mean, 1e-6) << "chunks of " << chunk;
  }
}

/// Two query encoders over one-token texts (token t = the text's row): x embeds row t as label t % 50 of A, y as
/// label (t + 7) % 50 of B. Records the rows of every corpus it encodes.
class TwoEncoderRanking final : public LabelRanking {
 public:
  static constexpr std::int64_t kLabels = 50, kWidth = 1000;
  TwoEncoderRanking() {
    torch::manual_seed(12);
    a_ = torch::nn::functional::normalize(torch::randn({kLabels, kWidth}), torch::nn::functional::NormalizeFuncOptions().dim(1));
    b_ = torch::nn::functional::normalize(torch::randn({kLabels, kWidth}), torch::nn::functional::NormalizeFuncOptions().dim(1));
  }
  torch::Tensor encode_queries(const std::string& encoder, const TokenizedCorpus& corpus, Progress&, std::string_view) override {
    encoded_rows.push_back(corpus.size());
    std::vector<std::int64_t> rows;
    for (std::int64_t i = 0; i < corpus.size(); ++i) rows.push_back((corpus.tokens(i)[0] + (encoder == "y" ? 7 : 0)) % kLabels);
    return (encoder == "y" ? b_ : a_).index_select(0, torch::tensor(rows, torch::kInt64));
  }
  torch::Tensor encode_query_rows(const std::string&, const TokenizedCorpus&, std::span<const std::int64_t>) override { return {}; }
  std::vector<InferenceMode> inference_modes(const TokenizedCorpus&, Progress&) override {
    return {InferenceMode{.name = "a", .metric_prefix = "a", .query_encoder = "x", .label_matrix = a_, .training_space = true},
            InferenceMode{.name = "b", .metric_prefix = "b", .query_encoder = "y", .label_matrix = b_}};
  }
  std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus&) override { return {}; }
  std::vector<std::int64_t> encoded_rows;

 private:
  torch::Tensor a_, b_;
};

TEST(ModeEvaluation, TestQueriesAreEncodedAndRankedASliceAtATime) {
  // 2,600 test queries of 2 x 1000 floats: at the smallest budget a slice holds 1,024 of them (32 MB / 8 / 8 kB,
  // rounded to the encoders' 1,024-row chunks, at least one), so three slices. Row t's truth is label t % 50, but
  // (t + 7) % 50 for every fourth row: mode a ranks t % 50 first (P@1 = 3/4), mode b (t + 7) % 50 (P@1 = 1/4).
  const std::int64_t n = 2600;
  TokenizedCorpus queries;
  std::vector<std::vector<std::int32_t>> truth;
  for (std::int64_t t = 0; t < n; ++t) {
    queries.append(std::vector<std::int32_t>{static_cast<std::int32_t>(t)});
    truth.push_back({static_cast<std::int32_t>((t + (t % 4 == 0 ? 7 : 0)) % TwoEncoderRanking::kLabels)});
  }
  const CsrMatrix truth_matrix = csr_from_rows(truth, TwoEncoderRanking::kLabels);
  EvaluationSetup setup;
  setup.truth = &truth_matrix;
  setup.ks = {1};
  setup.top = 5;
  set_memory_budget_mb(kMinMemoryBudgetMb);
  TwoEncoderRanking ranking;
  const ModeEvaluation evaluation = evaluate_modes(ranking, queries, TokenizedCorpus{}, setup);
  set_memory_budget_mb(0);
  ASSERT_EQ(evaluation.results.size(), 2u);
  EXPECT_EQ(evaluation.results[0].rows, n);
  EXPECT_DOUBLE_EQ(evaluation.results[0].get("P@1"), 0.75);
  EXPECT_DOUBLE_EQ(evaluation.results[1].get("P@1"), 0.25);
  // Each encoder saw the three slices, never the whole set; the first 1,024 rows stay for the score spread.
  EXPECT_EQ(ranking.encoded_rows, (std::vector<std::int64_t>{1024, 1024, 1024, 1024, 552, 552}));
  EXPECT_EQ(evaluation.queries.at("x").size(0), 1024);
  EXPECT_TRUE(torch::equal(evaluation.queries.at("y")[3], ranking.encode_queries("y", corpus_rows(queries, 3, 4), silent_progress(), {})[0]));

  // Through an approximate index (each holds a copy of its labels) the modes are ranked one after the other, the
  // slices encoded again for each; an inverted file of one cluster (50 labels) finds what exact search finds.
  setup.index = "ivf:probe=1000";
  set_memory_budget_mb(kMinMemoryBudgetMb);
  TwoEncoderRanking one_by_one;
  const ModeEvaluation approximate = evaluate_modes(one_by_one, queries, TokenizedCorpus{}, setup);
  set_memory_budget_mb(0);
  EXPECT_EQ(one_by_one.encoded_rows, (std::vector<std::int64_t>{1024, 1024, 552, 1024, 1024, 552}));
  EXPECT_DOUBLE_EQ(approximate.results[0].get("P@1"), 0.75);
  EXPECT_DOUBLE_EQ(approximate.results[1].get("P@1"), 0.25);
  for (const EvalResult& result : approximate.results) {
    EXPECT_EQ(result.search_recall_queries, 1000) << "an even 1,000 of the 2,600 rows";
    EXPECT_DOUBLE_EQ(result.search_recall_at_10, 1.0);
  }
  EXPECT_EQ(approximate.queries.at("x").size(0), 1024);
}

TEST(ModeEvaluation, AnApproximateSearchsRecallIsMeasuredOnAnEvenSampleOfTestRows) {
  // Worked by hand. 128 labels in two orthogonal groups, which an inverted file of 64 labels a cluster makes its
  // two clusters (k-means++ never seeds a second centroid on the first's direction): labels 0-63 are
  // (1 + i/100)·e1, labels 64-127 (3 + j/100)·e2. Query (1, 0.5, 0) is nearest e1's centroid, so probing one
  // cluster it finds labels 0-63, where its exact top 10 is labels 118-127 (scores 1.77-1.815 against at most
  // 1.63): recall 0. Query (0, 1, 0) probes e2's cluster, which holds its exact top 10: recall 1. Even test rows
  // are the first, odd ones the second: all 40 rows sampled give 1/2; a sample of 10 (every fourth row, all
  // even) gives 0.
  torch::Tensor labels = torch::zeros({128, 3});
  for (std::int64_t i = 0; i < 64; ++i) {
    labels[i][0] = 1 + static_cast<double>(i) / 100;
    labels[64 + i][1] = 3 + static_cast<double>(i) / 100;
  }
  const std::int64_t n = 40;
  torch::Tensor queries = torch::zeros({n, 3});
  for (std::int64_t r = 0; r < n; ++r) {
    if (r % 2 == 0) {
      queries[r][0] = 1;
      queries[r][1] = 0.5;
    } else {
      queries[r][1] = 1;
    }
  }
  const CsrMatrix truth = csr_from_rows(std::vector<std::vector<std::int32_t>>(n, std::vector<std::int32_t>{63}), 128);
  EvaluationSetup setup;
  setup.truth = &truth;
  setup.ks = {1};
  setup.top = 10;
  setup.index = "ivf:probe=1,size=64";
  const auto recall_of = [&](std::int64_t sample) {
    setup.recall_sample = sample;
    RankingEvaluation evaluation(labels, setup);
    evaluation.add(queries.narrow(0, 0, 25), 0);  // two slices: the sample follows the rows' own numbers
    evaluation.add(queries.narrow(0, 25, n - 25), 25);
    return evaluation.result();
  };
  const EvalResult all = recall_of(1000);
  EXPECT_EQ(all.search_recall_queries, n);
  EXPECT_DOUBLE_EQ(all.search_recall_at_10, 0.5);
  // Every row's truth is label 63: first for the even rows in e1's cluster, where exact search puts label 127.
  EXPECT_DOUBLE_EQ(all.get("P@1"), 0.5);
  const EvalResult tenth = recall_of(10);
  EXPECT_EQ(tenth.search_recall_queries, 10);
  EXPECT_DOUBLE_EQ(tenth.search_recall_at_10, 0.0);
  setup.index = "exact";
  RankingEvaluation exact(labels, setup);
  exact.add(queries, 0);
  EXPECT_EQ(exact.result().search_recall_queries, 0);
  EXPECT_DOUBLE_EQ(exact.result().search_recall_at_10, -1.0) << "an exact search has no recall to report";
  EXPECT_DOUBLE_EQ(exact.result().get("P@1"), 0.0);
}

TEST(ModeEvaluation, ARecallTargetRaisesTheProbeOrFallsBackToExactSearch) {
  // Worked by hand, as the test above. Four orthogonal groups of 32 labels, (s + i/100)·e_g with s = 1, 3, 0.5, 0.5
  // for g = 1..4, which an inverted file of 32 labels a cluster makes its four clusters. Query (1, 0.5, 0, 0) is
  // nearest e1's centroid, then e2's; its exact top 10 is labels 54-63 of e2's group (scores 1.61-1.655 against at
  // most 1.31 in e1's). Probe 1 finds none of them (recall 0); probe 2, half the clusters, finds all: the target
  // 0.95 is met there.
  torch::Tensor labels = torch::zeros({128, 4});
  const double scale[4] = {1, 3, 0.5, 0.5};
  for (std::int64_t g = 0; g < 4; ++g)
    for (std::int64_t i = 0; i < 32; ++i) labels[32 * g + i][g] = scale[g] + static_cast<double>(i) / 100;
  const std::int64_t n = 30;
  torch::Tensor queries = torch::zeros({n, 4});
  queries.select(1, 0).fill_(1);
  queries.select(1, 1).fill_(0.5);
  const CsrMatrix truth = csr_from_rows(std::vector<std::vector<std::int32_t>>(n, std::vector<std::int32_t>{63}), 128);
  EvaluationSetup setup;
  setup.truth = &truth;
  setup.ks = {1};
  setup.top = 10;
  const auto evaluated = [&](const torch::Tensor& keys, const std::string& index, double recall_target) {
    setup.index = index;
    setup.recall_target = recall_target;
    RankingEvaluation evaluation(keys, setup);
    evaluation.add(queries, 0);
    return evaluation.result();
  };
  const EvalResult tuned = evaluated(labels, "ivf:probe=1,size=32", 0.95);
  EXPECT_FALSE(tuned.search_fell_back_to_exact);
  EXPECT_EQ(tuned.search_probe, 2);
  EXPECT_EQ(tuned.search_clusters, 4);
  EXPECT_EQ(tuned.calibration_queries, n);
  EXPECT_DOUBLE_EQ(tuned.calibration_recall_at_10, 1.0);
  EXPECT_DOUBLE_EQ(tuned.search_recall_at_10, 1.0);
  EXPECT_DOUBLE_EQ(tuned.get("P@1"), 1.0) << "label 63 ranks first once e2's cluster is searched";

  // Without a target the index ranks as specified: probe 1 searches e1's cluster only.
  const EvalResult as_specified = evaluated(labels, "ivf:probe=1,size=32", 0);
  EXPECT_EQ(as_specified.calibration_queries, 0);
  EXPECT_DOUBLE_EQ(as_specified.search_recall_at_10, 0.0);
  EXPECT_DOUBLE_EQ(as_specified.get("P@1"), 0.0);

  // Two clusters (the test above's two groups of 64): the probe cannot rise past half the clusters, so the labels
  // are searched exactly. Query rows alternate (1, 0.5, 0, 0), whose top 10 lies in the other cluster (recall 0),
  // and (0, 1, 0, 0) (recall 1): 15 of the 30 rows, 0.5.
  torch::Tensor two_groups = torch::zeros({128, 4});
  for (std::int64_t i = 0; i < 64; ++i) {
    two_groups[i][0] = 1 + static_cast<double>(i) / 100;
    two_groups[64 + i][1] = 3 + static_cast<double>(i) / 100;
  }
  for (std::int64_t r = 1; r < n; r += 2) {
    queries[r][0] = 0;
    queries[r][1] = 1;
  }
  const EvalResult exact = evaluated(two_groups, "ivf:probe=1,size=64", 0.95);
  EXPECT_TRUE(exact.search_fell_back_to_exact);
  EXPECT_EQ(exact.search_probe, 1);
  EXPECT_EQ(exact.search_clusters, 2);
  EXPECT_DOUBLE_EQ(exact.calibration_recall_at_10, 0.5);
  EXPECT_EQ(exact.search_recall_queries, 0) << "an exact search has no recall to report";
  // Exactly, every row's first label is 127 (0.5·3.63 = 1.815 against at most 1.63 for the first kind of row), never 63.
  EXPECT_DOUBLE_EQ(exact.get("P@1"), 0.0);
}

TEST(CollapseSignal, EveryEvaluationRecordsItAndNgameOnBibtexDoesNotCollapse) {
  // Bibtex's long documents made NGAME's triplet training collapse within ~20 steps when its embeddings
  // went through the Tanh(Linear) DE head (score spread 0.002, mean cosine 0.999 after one epoch).
  const std::filesystem::path mulan = std::filesystem::path(XMC_SHARED_DIR) / "datasets/mulan/bibtex";
  if (!std::filesystem::exists(mulan)) GTEST_SKIP() << "shared mulan datasets not found at " << mulan;
  test::TempDir dir;
  MulanImportOptions import;
  import.train_arff = mulan / "bibtex-train.arff";
  import.test_arff = mulan / "bibtex-test.arff";
  import.labels_xml = mulan / "bibtex.xml";
  save_dataset(import_mulan(import), dir / "bibtex");
  TrainConfig config = ngame_config(dir / "bibtex");  // the Bibtex preset's recipe, two M1 epochs
  config.edit<EncoderOptions>().dim = 256;
  config.batch_size = 128;
  config.edit<ClusterBatchOptions>().cluster_size = 8;
  config.lr = 0.005;
  config.seed = 1;
  config.epochs = 2;
  config.edit<NgameOptions>().m4_epochs = 1;
  TrainingRun run(config, dir / "runs.sqlite");
  run.run();
  RunStore store(dir / "runs.sqlite");
  std::set<std::int64_t> evaluation_steps;
  for (const auto& e : store.evaluations(run.run_id())) evaluation_steps.insert(e.step);
  const auto spreads = store.scalars(run.run_id(), "score_spread");
  const auto means = store.scalars(run.run_id(), "score_mean");
  ASSERT_EQ(spreads.size(), evaluation_steps.size());
  ASSERT_EQ(means.size(), evaluation_steps.size());
  for (std::size_t i = 0; i < spreads.size(); ++i)
    EXPECT_FALSE(embeddings_collapsed(spreads[i].value, means[i].value))
        << "evaluation at step " << spreads[i].step << ": spread " << spreads[i].value << ", mean " << means[i].value;
}

}  // namespace
}  // namespace xmc
