// Retrieval-augmented ranking on a case worked by hand, and the `rag` mode of a training run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/data/csr_matrix.h"
#include "engine/index/rag_options.h"
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

TEST(RetrievalAugmentedRanking, ARunEvaluatesAndStoresTheRagMode) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 5, 300, 80);
  TrainConfig config;
  config.dataset = dir / "data";
  config.edit<EncoderOptions>().dim = 32;
  config.batch_size = 32;
  config.epochs = 3;
  config.lr = 0.01;
  config.threads = 1;
  config.eval_k = {1, 3};
  config.eval_top = 10;
  config.eval_every = 0;
  config.edit<RagOptions>().use = "on";
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
  std::int64_t dim = 0;
  const std::vector<float> labels = predictor.label_vectors("embedding", dim);
  const std::vector<float> train = predictor.query_vectors(data.train_text, "embedding", dim);
  const std::vector<std::string> texts{data.test_text[0], data.test_text[1]};
  const std::vector<float> queries = predictor.query_vectors(texts, "rag", dim);
  const RetrievalAugmentation rag{.train_queries = torch::from_blob(const_cast<float*>(train.data()), {data.num_train(), dim}).clone(),
                                  .train_labels = &data.train_labels, .top = 100, .lambda = 0.9, .temperature = 0.05};
  const RankedPredictions expected = rank_with_retrieval(torch::from_blob(const_cast<float*>(queries.data()), {2, dim}).clone(),
                                                         torch::from_blob(const_cast<float*>(labels.data()), {predictor.num_labels(), dim}).clone(), rag, 5);
  const auto served = predictor.predict(texts, 5, "rag");
  for (std::size_t t = 0; t < 2; ++t) {
    ASSERT_EQ(served[t].size(), 5u);
    for (std::int64_t j = 0; j < 5; ++j) EXPECT_EQ(served[t][static_cast<std::size_t>(j)].label, expected.labels[static_cast<std::int64_t>(t)][j].item<std::int64_t>());
  }
  // The first label served ranks first when asked about (rank_of and search agree with predict).
  EXPECT_EQ(predictor.rank_of(texts[0], served[0][0].label, "rag").rank, 1);
  const SearchAnswer answer = predictor.search(texts[0], 5, {served[0][0].label});
  EXPECT_EQ(answer.modes.back().mode, "rag");
  EXPECT_EQ(answer.modes.back().ranks.front().rank, 1);
}

}  // namespace xmc
