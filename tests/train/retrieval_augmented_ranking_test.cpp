// Retrieval-augmented ranking on a case worked by hand, and the `rag` mode of a training run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/core/error.h"
#include "engine/data/csr_matrix.h"
#include "engine/index/rag_options.h"
#include "engine/method/held_out_queries.h"
#include "engine/records/chosen_settings.h"
#include "engine/data/dataset.h"
#include "engine/model/encoder_options.h"
#include "engine/session/predictor.h"
#include "engine/store/run_store.h"
#include "engine/rank/retrieval_augmented_search.h"
#include "engine/train/training_run.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {

// Labels l0 = (1, 0), l1 = (0, 1), l2 = (0.6, 0.8); training queries q0 = (1, 0) with label 1, q1 = (0, 1) with
// label 2; top 2, λ = 0.5, T = 1; the query (1, 0).
//   labels retrieved: l0 (score 1), l2 (0.6); training queries: q0 (1), q1 (0)
//   softmax over [1, 0.6, 1, 0]: e = [2.71828, 1.82212, 2.71828, 1], sum 8.25868 -> p = [.32914, .22063, .32914, .12109]
//   l0 = 0.5 · .32914 = .16457;  l2 = 0.5 · .22063 + 0.5 · .12109 = .17086;  l1 = 0.5 · .32914 = .16457
// so l2 first (the plain ranking puts it second), then l0 and l1 (equal: lower id first).
TEST(RetrievalAugmentedRanking, MatchesAHandWorkedCase) {
  const torch::Tensor labels = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.6f, 0.8f}});
  const CsrMatrix train_labels = csr_from_rows({{1}, {2}}, 3);
  const RetrievalAugmentation rag{.train_queries = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}}),
                                  .train_labels = &train_labels, .top = 2, .lambda = 0.5, .temperature = 1.0};
  const RankedPredictions ranked = rank_with_retrieval(torch::tensor({{1.0f, 0.0f}}), labels, rag, 3);
  EXPECT_TRUE(torch::equal(ranked.labels, torch::tensor({{2, 0, 1}}, torch::kLong))) << ranked.labels;
  const double sum = 2 * std::exp(1.0) + std::exp(0.6) + 1.0;
  EXPECT_NEAR(ranked.scores[0][0].item<double>(), 0.5 * std::exp(0.6) / sum + 0.5 / sum, 1e-6);
  EXPECT_NEAR(ranked.scores[0][1].item<double>(), 0.5 * std::exp(1.0) / sum, 1e-6);
  // A filtered pair is never predicted; fewer labels than asked for end with -1.
  const FilterPairs filter({{0, 2}});
  const RankedPredictions filtered = rank_with_retrieval(torch::tensor({{1.0f, 0.0f}}), labels, rag, 3, &filter);
  EXPECT_TRUE(torch::equal(filtered.labels, torch::tensor({{0, 1, -1}}, torch::kLong))) << filtered.labels;
  // λ = 1: the neighbours have no say, and the labels' own order comes back.
  RetrievalAugmentation labels_only = rag;
  labels_only.lambda = 1.0;
  EXPECT_TRUE(torch::equal(rank_with_retrieval(torch::tensor({{1.0f, 0.0f}}), labels, labels_only, 2).labels, torch::tensor({{0, 2}}, torch::kLong)));
  // Training labels that do not belong to the training queries are refused.
  const CsrMatrix three_rows = csr_from_rows({{1}, {2}, {0}}, 3);
  RetrievalAugmentation mismatched = rag;
  mismatched.train_labels = &three_rows;
  EXPECT_THROW(rank_with_retrieval(torch::tensor({{1.0f, 0.0f}}), labels, mismatched, 3), ConfigError);
}

/// A small dexml run of `epochs` on the keyword set in `dir`/data, with mode rag on.
TrainConfig rag_run_config(const std::filesystem::path& dir, std::int64_t epochs) {
  test::write_keyword_dataset(dir / "data", 5, 300, 80);
  TrainConfig config;
  config.dataset = dir / "data";
  config.edit<EncoderOptions>().dim = 32;
  config.batch_size = 32;
  config.epochs = epochs;
  config.lr = 0.01;
  config.threads = 1;
  config.eval_k = {1, 3};
  config.eval_top = 10;
  config.edit<RagOptions>().use = "on";
  return config;
}

/// The labels `predictor` serves in mode rag for `texts`: their augmented ranking, worked here from the run's own
/// vectors at `lambda` (rank_with_retrieval), top 5 each; returns what it served.
std::vector<std::vector<LabelScore>> expect_rag_served_at(const Predictor& predictor, const Dataset& data, const std::vector<std::string>& texts,
                                                          double lambda) {
  std::int64_t dim = 0;
  const std::vector<float> labels = predictor.label_vectors("embedding", dim);
  const std::vector<float> train = predictor.query_vectors(data.train_text, "embedding", dim);
  const std::vector<float> queries = predictor.query_vectors(texts, "rag", dim);
  const auto n = static_cast<std::int64_t>(texts.size());
  const RetrievalAugmentation rag{.train_queries = torch::from_blob(const_cast<float*>(train.data()), {data.num_train(), dim}).clone(),
                                  .train_labels = &data.train_labels, .top = 100, .lambda = lambda, .temperature = 0.05};
  const RankedPredictions expected = rank_with_retrieval(torch::from_blob(const_cast<float*>(queries.data()), {n, dim}).clone(),
                                                         torch::from_blob(const_cast<float*>(labels.data()), {predictor.num_labels(), dim}).clone(), rag, 5);
  const auto served = predictor.predict(texts, 5, "rag");
  for (std::size_t t = 0; t < texts.size(); ++t) {
    EXPECT_EQ(served[t].size(), 5u);
    for (std::size_t j = 0; j < std::min<std::size_t>(5, served[t].size()); ++j)
      EXPECT_EQ(served[t][j].label, expected.labels[static_cast<std::int64_t>(t)][static_cast<std::int64_t>(j)].item<std::int64_t>()) << "λ " << lambda;
  }
  return served;
}

TEST(RetrievalAugmentedRanking, ARunEvaluatesAndStoresTheRagMode) {
  test::TempDir dir;
  TrainConfig config = rag_run_config(dir.path(), 3);
  config.eval_every = 0;
  TrainingRun run(config, dir / "runs.sqlite");
  const TrainResult result = run.run();
  ASSERT_EQ(result.outcome, RunOutcome::Completed);
  std::map<std::string, double> metrics;
  for (const auto& e : RunStore(dir / "runs.sqlite").evaluations(run.run_id())) metrics[e.metric] = e.value;
  ASSERT_TRUE(metrics.count("rag/P@1")) << "no rag/P@1 stored";
  ASSERT_TRUE(metrics.count("emb/P@1"));
  EXPECT_GT(metrics["rag/P@1"], 0.5);
  EXPECT_EQ(metrics["P@1"], metrics["emb/P@1"]) << "the method's own mode stays the primary";

  // The predictor serves the mode too: its ranking is the augmented ranking of the run's own vectors.
  const Dataset data = load_dataset(dir / "data", {.load_features = false});
  const Predictor predictor = Predictor::open(dir / "runs.sqlite", run.run_id());
  ASSERT_EQ(predictor.modes().back(), "rag");
  EXPECT_EQ(predictor.default_mode(), "embedding");
  const std::vector<std::string> texts{data.test_text[0], data.test_text[1]};
  const auto served = expect_rag_served_at(predictor, data, texts, 0.9);
  ASSERT_FALSE(served[0].empty());
  // The first label served ranks first when asked about (rank_of and search agree with predict).
  EXPECT_EQ(predictor.rank_of(texts[0], served[0][0].label, "rag").rank, 1);
  const SearchAnswer answer = predictor.search(texts[0], 5, {served[0][0].label});
  EXPECT_EQ(answer.modes.back().mode, "rag");
  EXPECT_EQ(answer.modes.back().ranks.front().rank, 1);
}

// λ chosen on held-out training queries, on cases worked by hand. 40 training queries, type A = (1, 0) (rows 0-19) and
// type B = (0, 1) (rows 20-39); every 4th row held out; top 2, T = 0.05. For a held-out A query the joint list is
// [its nearer label: 1, the other: 0, two A neighbours: 1, 1], p ≈ [1/3, 0, 1/3, 1/3]: the nearer label scores λ/3,
// the neighbours' label (1 − λ)·2/3.
TEST(RetrievalAugmentedRanking, LambdaIsChosenOnHeldOutQueriesRankedAgainstTheOthers) {
  std::vector<float> rows;
  for (int r = 0; r < 40; ++r) rows.insert(rows.end(), r < 20 ? std::initializer_list<float>{1, 0} : std::initializer_list<float>{0, 1});
  const torch::Tensor train = torch::from_blob(rows.data(), {40, 2}).clone();
  std::vector<std::int64_t> held;
  for (std::int64_t r = 0; r < 40; r += 4) held.push_back(r);
  const auto labelled = [](const std::function<std::int32_t(int)>& label_of) {
    std::vector<std::vector<std::int32_t>> out;
    for (int r = 0; r < 40; ++r) out.push_back({label_of(r)});
    return csr_from_rows(out, 2);
  };

  // The labels' vectors mislead (label 0 lies along B, label 1 along A), the neighbours' labels are right (A: 0,
  // B: 1): the neighbours win while (1 − λ)·2/3 > λ/3, i.e. λ < 2/3. Of the best λ (0 to 0.6), the one nearest the
  // configured 0.9 is 0.6; it beats 0.9 on every held-out query.
  const CsrMatrix right_neighbours = labelled([](int r) { return r < 20 ? 0 : 1; });
  const torch::Tensor misleading = torch::tensor({{0.0f, 1.0f}, {1.0f, 0.0f}});
  RetrievalAugmentation rag{.train_queries = train, .train_labels = &right_neighbours, .top = 2, .lambda = 0.9, .temperature = 0.05};
  RagLambdaChoice choice = choose_rag_lambda(rag, held, misleading);
  EXPECT_DOUBLE_EQ(choice.lambda, 0.6);
  EXPECT_EQ(choice.best, -1);
  EXPECT_EQ(choice.queries, 10);
  EXPECT_NE(choice.curve.find("0.60: "), std::string::npos) << choice.curve;

  // The labels' vectors are right (label 0 along A) and the held-out rows carry them, but the rows that train carry the
  // other label: the neighbours mislead, λ >= 0.7 ranks right, and the configured 0.9 is among the best. Were a held-out
  // query its own neighbour, it would vote for its own label.
  const CsrMatrix wrong_neighbours = labelled([](int r) { return (r % 4 == 0) == (r < 20) ? 0 : 1; });
  const torch::Tensor right = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}});
  rag.train_labels = &wrong_neighbours;
  choice = choose_rag_lambda(rag, held, right);
  EXPECT_DOUBLE_EQ(choice.lambda, 0.9);
  EXPECT_EQ(choice.best, -1);

  // Labels and neighbours agree: every λ but 0 (where only the neighbours' label is ranked) scores alike, and the
  // configured one stays; so does a configured λ off the grid.
  rag.train_labels = &right_neighbours;
  rag.lambda = 0.85;
  choice = choose_rag_lambda(rag, held, right);
  EXPECT_DOUBLE_EQ(choice.lambda, 0.85);
  EXPECT_NE(choice.curve.find("0.85: "), std::string::npos) << choice.curve;

  EXPECT_THROW(choose_rag_lambda(rag, std::vector<std::int64_t>{40}, right), Error);
}

// A run that holds training queries out chooses λ on them at each evaluation, says so in its log, records the choice
// beside rag.lambda, and the Predictor serves mode rag with it; without held-out queries the option is refused.
TEST(RetrievalAugmentedRanking, ARunChoosesLambdaOnItsHeldOutQueries) {
  test::TempDir dir;
  TrainConfig config = rag_run_config(dir.path(), 2);
  config.edit<RagOptions>().lambda_from = "held-out";
  try {
    TrainingRun(config, dir / "refused.sqlite").run();
    ADD_FAILURE() << "no held-out queries, yet accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rag.lambda_from: held-out, but dexml holds no training queries out"), std::string::npos) << e.what();
  }
  config.edit<HeldOutOptions>().share = 0.1;
  TrainingRun run(config, dir / "runs.sqlite");
  ASSERT_EQ(run.run().outcome, RunOutcome::Completed);
  const RunStore store(dir / "runs.sqlite");
  std::vector<std::string> lines;
  for (const LogLine& line : store.log(run.run_id()))
    if (line.message.rfind("rag.lambda: ", 0) == 0) lines.push_back(line.message);
  ASSERT_EQ(lines.size(), 2u) << "one choice per evaluation";
  EXPECT_NE(lines[0].find(" on 30 held-out training queries by P@1 + P@3 + P@5: 0.00: "), std::string::npos) << lines[0];
  const std::vector<ChosenSetting> chosen = chosen_settings(store.scalars_with_prefix(run.run_id(), kChosenSettingPrefix));
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].key, "rag.lambda");
  const double lambda = chosen[0].value;

  const Dataset data = load_dataset(dir / "data", {.load_features = false});
  const Predictor predictor = Predictor::open(dir / "runs.sqlite", run.run_id());
  expect_rag_served_at(predictor, data, {data.test_text[0], data.test_text[1], data.test_text[2]}, lambda);
}

}  // namespace xmc
