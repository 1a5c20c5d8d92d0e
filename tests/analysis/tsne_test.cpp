// t-SNE of negatives: the exact t-SNE keeps well-separated clusters apart and is deterministic; the
// negatives snapshot puts every label in exactly one group; a training run records snapshots.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "engine/analysis/negatives_snapshot.h"
#include "engine/analysis/tsne.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/store/run_store.h"
#include "engine/train/training_run.h"
#include "engine/model/encoder_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

using json = nlohmann::json;

// `blobs` Gaussian blobs of `per_blob` points in 20-D: unit noise around centres ~ N(0, 10²).
torch::Tensor gaussian_blobs(int blobs, int per_blob, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  torch::Tensor x = torch::empty({blobs * per_blob, 20});
  for (int b = 0; b < blobs; ++b) {
    std::vector<float> centre(20);
    for (auto& c : centre) c = 10.0f * normal(rng);
    for (int i = 0; i < per_blob; ++i)
      for (int j = 0; j < 20; ++j) x[b * per_blob + i][j] = centre[static_cast<std::size_t>(j)] + normal(rng);
  }
  return x;
}

TEST(Tsne, KeepsSeparatedBlobsTogetherAndApart) {
  constexpr int kBlobs = 3, kPerBlob = 40;
  const torch::Tensor x = gaussian_blobs(kBlobs, kPerBlob, 7);
  const torch::Tensor y = tsne_2d(x, {});
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{kBlobs * kPerBlob, 2}));
  EXPECT_EQ(y.dtype(), torch::kFloat32);
  ASSERT_TRUE(torch::isfinite(y).all().item<bool>());

  // Every point's nearest 2-D neighbour is from its own blob.
  torch::Tensor d = torch::cdist(y, y);
  d.fill_diagonal_(std::numeric_limits<float>::infinity());
  const torch::Tensor nearest = d.argmin(1);
  for (int i = 0; i < kBlobs * kPerBlob; ++i) EXPECT_EQ(nearest[i].item<std::int64_t>() / kPerBlob, i / kPerBlob) << "point " << i;

  // Blob centroids are far apart compared with the blobs' spread.
  std::vector<torch::Tensor> centroids;
  double spread = 0;
  for (int b = 0; b < kBlobs; ++b) {
    const torch::Tensor part = y.slice(0, b * kPerBlob, (b + 1) * kPerBlob);
    centroids.push_back(part.mean(0));
    spread = std::max(spread, (part - part.mean(0)).norm(2, 1).mean().item<double>());
  }
  for (int a = 0; a < kBlobs; ++a)
    for (int b = a + 1; b < kBlobs; ++b) EXPECT_GT((centroids[a] - centroids[b]).norm().item<double>(), 3 * spread);
}

TEST(Tsne, IsDeterministicForASeed) {
  const torch::Tensor x = gaussian_blobs(2, 30, 3);
  TsneOptions options;
  options.iterations = 200;
  options.seed = 42;
  const torch::Tensor a = tsne_2d(x, options);
  const torch::Tensor b = tsne_2d(x, options);
  EXPECT_TRUE(torch::equal(a, b));
  options.seed = 43;
  EXPECT_FALSE(torch::equal(a, tsne_2d(x, options)));
  // Double input and a perplexity larger than the points allow are fine.
  options.perplexity = 500;
  EXPECT_TRUE(torch::isfinite(tsne_2d(x.to(torch::kFloat64), options)).all().item<bool>());
}

TEST(Tsne, ShowsTheMapAsItConvergesWithoutChangingIt) {
  const torch::Tensor x = gaussian_blobs(2, 30, 3);
  TsneOptions options;
  options.iterations = 200;
  options.seed = 42;
  const torch::Tensor quiet = tsne_2d(x, options);
  std::vector<std::int64_t> seen;
  torch::Tensor last;
  options.on_layout = [&](const torch::Tensor& map, std::int64_t iteration) {
    EXPECT_EQ(map.sizes(), (std::vector<std::int64_t>{60, 2}));
    seen.push_back(iteration);
    last = map.clone();
  };
  const torch::Tensor watched = tsne_2d(x, options);
  EXPECT_TRUE(torch::equal(quiet, watched));  // watching draws nothing from the stream, changes nothing
  // Every 25 iterations, not after the last (the result is that map): 25, 50, ..., 175.
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen.front(), 25);
  EXPECT_EQ(seen.back(), 175);
  EXPECT_FALSE(torch::equal(last, watched));  // still moving at 175
  EXPECT_LT(last.mean(0).abs().max().item<double>(), 1e-4);  // centred, as the result
}

TEST(Tsne, HandlesTinyInputs) {
  EXPECT_EQ(tsne_2d(torch::zeros({0, 5}), {}).sizes(), (std::vector<std::int64_t>{0, 2}));
  const torch::Tensor one = tsne_2d(torch::ones({1, 5}), {});
  EXPECT_TRUE(torch::equal(one, torch::zeros({1, 2})));
  // Two or three points: their exact configuration (distances kept).
  const torch::Tensor three = torch::tensor({{0.f, 0.f, 0.f}, {3.f, 0.f, 0.f}, {0.f, 4.f, 0.f}});
  const torch::Tensor y = tsne_2d(three, {});
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 2}));
  EXPECT_TRUE(torch::allclose(torch::cdist(y, y), torch::cdist(three, three), 1e-4, 1e-4));
  const torch::Tensor two = tsne_2d(three.slice(0, 0, 2), {});
  EXPECT_NEAR(torch::cdist(two, two)[0][1].item<float>(), 3.0f, 1e-4);
  // Four identical points: no NaN.
  EXPECT_TRUE(torch::isfinite(tsne_2d(torch::ones({4, 3}), {})).all().item<bool>());
  EXPECT_THROW(tsne_2d(torch::ones({4}), {}), std::exception);
  EXPECT_THROW(tsne_2d(torch::full({4, 3}, std::nanf("")), {}), std::exception);
}

TEST(Tsne, ReportsItsIterationsAndStopsWhenCancelled) {
  // Counts what it is told; asks to stop once it has heard of iteration 100.
  struct Recorder final : Progress {
    std::vector<std::int64_t> done;
    std::int64_t stop_after = -1;
    void start(std::string_view, std::int64_t) override {}
    void update(std::int64_t d) override { done.push_back(d); }
    void finish() override {}
    bool cancelled() const override { return stop_after >= 0 && !done.empty() && done.back() >= stop_after; }
  };
  const torch::Tensor points = torch::randn({40, 5}, torch::TensorOptions().dtype(torch::kFloat32));
  Recorder recorder;
  TsneOptions options;
  options.iterations = 200;
  options.progress = &recorder;
  tsne_2d(points, options);
  ASSERT_EQ(recorder.done.size(), std::size_t{20});  // every 10 iterations
  EXPECT_EQ(recorder.done.front(), 0);
  EXPECT_EQ(recorder.done.back(), 190);
  EXPECT_TRUE(std::is_sorted(recorder.done.begin(), recorder.done.end()));
  Recorder stopper;
  stopper.stop_after = 100;
  options.progress = &stopper;
  EXPECT_THROW(tsne_2d(points, options), Cancelled);
  EXPECT_EQ(stopper.done.back(), 100);  // stopped at the next check, not at the end
}

// ---- the negatives snapshot ---------------------------------------------------------------------

std::map<std::string, std::vector<std::int64_t>> groups_of(const json& snapshot) {
  std::map<std::string, std::vector<std::int64_t>> groups;
  for (const auto& p : snapshot["points"]) groups[p["group"].get<std::string>()].push_back(p["label"].get<std::int64_t>());
  return groups;
}

TEST(NegativesSnapshot, PutsEveryLabelInExactlyOneGroup) {
  constexpr std::int64_t kLabels = 300, kDim = 16;
  torch::manual_seed(5);
  const torch::Tensor labels = torch::nn::functional::normalize(torch::randn({kLabels, kDim}),
                                                                torch::nn::functional::NormalizeFuncOptions().dim(1));
  const torch::Tensor query = torch::nn::functional::normalize(labels[3] + labels[7] + labels[11], torch::nn::functional::NormalizeFuncOptions().dim(0));
  std::vector<std::string> texts;
  for (std::int64_t l = 0; l < kLabels; ++l) texts.push_back("label text " + std::to_string(l));

  NegativesSnapshotOptions options;
  options.hard = 10;
  options.random = 20;
  options.max_in_batch = 30;
  options.tsne.iterations = 100;

  // The exact top-10 non-positive labels by similarity.
  const std::set<std::int64_t> positives{3, 7, 11};
  torch::Tensor scores = torch::mv(labels, query);
  for (auto p : positives) scores[p] = -1e9;
  const torch::Tensor top = std::get<1>(scores.topk(10));
  std::vector<std::int64_t> hard(top.data_ptr<std::int64_t>(), top.data_ptr<std::int64_t>() + 10);

  // The batch gives it half of the hard negatives, a positive (ignored), a repeat, and 40 others.
  NegativesSnapshotInput input;
  input.query = 42;
  input.query_text = "the query";
  input.epoch = 2;
  input.step = 17;
  input.query_embedding = query;
  input.label_embeddings = labels;
  input.positives = {11, 3, 7, 3};
  input.batch_queries = 8;
  input.label_text = &texts;
  std::set<std::int64_t> given(hard.begin(), hard.begin() + 5);
  input.in_batch_pool = {hard[0], 7, hard[0]};
  for (std::size_t k = 1; k < 5; ++k) input.in_batch_pool.push_back(hard[k]);
  for (std::int64_t l = 100; input.in_batch_pool.size() < 47; ++l)
    if (std::find(hard.begin(), hard.end(), l) == hard.end()) input.in_batch_pool.push_back(l), given.insert(l);

  const json snapshot = json::parse(negatives_snapshot_json(input, options));
  EXPECT_EQ(snapshot["query"], 42);
  EXPECT_EQ(snapshot["query_text"], "the query");
  EXPECT_EQ(snapshot["epoch"], 2.0);
  EXPECT_EQ(snapshot["step"], 17);
  EXPECT_EQ(snapshot["batch_queries"], 8);
  ASSERT_FALSE(snapshot["points"].empty());
  const json& first = snapshot["points"][0];
  EXPECT_EQ(first["group"], "query");
  EXPECT_EQ(first["label"], -1);
  EXPECT_EQ(first["text"], "the query");

  auto groups = groups_of(snapshot);
  std::set<std::string> names;
  for (const auto& [name, members] : groups) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"query", "positive", "ann_hard", "missed_hard", "in_batch", "random"}));
  // Each label once, in one group.
  std::set<std::int64_t> seen;
  for (const auto& p : snapshot["points"]) {
    const auto label = p["label"].get<std::int64_t>();
    if (label >= 0) {
      EXPECT_TRUE(seen.insert(label).second) << "label " << label << " twice";
      EXPECT_EQ(p["text"], texts[static_cast<std::size_t>(label)]);
    }
    EXPECT_TRUE(std::isfinite(p["x"].get<double>()) && std::isfinite(p["y"].get<double>()));
  }
  EXPECT_EQ(groups["query"].size(), 1u);
  EXPECT_EQ(std::set<std::int64_t>(groups["positive"].begin(), groups["positive"].end()), positives);
  // ann_hard = the hard negatives the batch gave it, missed_hard = the others (most similar first).
  EXPECT_EQ(groups["ann_hard"], std::vector<std::int64_t>(hard.begin(), hard.begin() + 5));
  EXPECT_EQ(groups["missed_hard"], std::vector<std::int64_t>(hard.begin() + 5, hard.end()));
  for (auto l : groups["ann_hard"]) EXPECT_TRUE(given.contains(l));
  for (auto l : groups["missed_hard"]) EXPECT_FALSE(given.contains(l));
  // in_batch: the other 40 given labels, capped at 30; random: 20 labels from nowhere else.
  EXPECT_EQ(groups["in_batch"].size(), 30u);
  for (auto l : groups["in_batch"]) EXPECT_TRUE(given.contains(l) && !positives.contains(l));
  EXPECT_EQ(groups["random"].size(), 20u);
  for (auto l : groups["random"]) EXPECT_FALSE(given.contains(l) || positives.contains(l));
  EXPECT_EQ(snapshot["points"].size(), 1u + 3 + 10 + 30 + 20);
  EXPECT_EQ(snapshot["counts"]["in_batch"], 30);

  // Same inputs, same snapshot.
  EXPECT_EQ(negatives_snapshot_json(input, options), snapshot.dump());

  // Watched as it forms: the same points and groups at other places, and the same snapshot in the end.
  std::vector<json> forming;
  EXPECT_EQ(negatives_snapshot_json(input, options, [&](const std::string& so_far) { forming.push_back(json::parse(so_far)); }), snapshot.dump());
  ASSERT_EQ(forming.size(), static_cast<std::size_t>((options.tsne.iterations - 1) / options.tsne.layout_every));
  EXPECT_EQ(forming.front()["counts"], snapshot["counts"]);
  ASSERT_EQ(forming.front()["points"].size(), snapshot["points"].size());
  EXPECT_EQ(forming.front()["points"][5]["label"], snapshot["points"][5]["label"]);
  EXPECT_NE(forming.front()["points"][5]["x"], snapshot["points"][5]["x"]);
}

TEST(NegativesSnapshot, StaysBoundedOnFewLabelsAndRejectsBadInput) {
  const torch::Tensor labels = torch::eye(6);
  NegativesSnapshotInput input;
  input.query = 0;
  input.query_embedding = labels[0];
  input.label_embeddings = labels;
  input.positives = {0};
  const json snapshot = json::parse(negatives_snapshot_json(input, {}));
  // 6 labels: 1 positive, 5 missed hard negatives (no batch), nothing left for the other groups.
  auto groups = groups_of(snapshot);
  EXPECT_EQ(snapshot["points"].size(), 7u);
  EXPECT_EQ(groups["missed_hard"].size(), 5u);
  EXPECT_EQ(groups.count("random"), 0u);
  EXPECT_EQ(snapshot["points"][1]["text"], "label 0");

  input.positives = {6};
  EXPECT_THROW(negatives_snapshot_json(input, {}), Error);
  input.positives = {0};
  NegativesSnapshotOptions too_many;
  too_many.random = 5000;
  EXPECT_THROW(negatives_snapshot_json(input, too_many), Error);
  input.query_embedding = torch::ones({3});
  EXPECT_THROW(negatives_snapshot_json(input, {}), Error);
}

TEST(NegativesSnapshot, InBatchNegativesAreTheOtherQueriesPositives) {
  const CsrMatrix y = csr_from_rows({{0, 1}, {1, 2}, {3}, {4, 0}, {5}}, 6);
  const std::vector<std::vector<std::int64_t>> batches{{4, 2}, {0, 1, 3}};
  const QueryBatchPool pool = in_batch_negatives(y, batches, 0);
  EXPECT_EQ(pool.batch_queries, 3);
  EXPECT_EQ(pool.labels, (std::vector<std::int64_t>{2, 4}));  // its own 0 and 1 left out
  EXPECT_EQ(in_batch_negatives(y, batches, 2).labels, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(in_batch_negatives(y, batches, 9).batch_queries, 0);
}

// ---- in a training run --------------------------------------------------------------------------

void write_synthetic_dataset(const std::filesystem::path& dir) { test::write_keyword_dataset(dir, 11, 200, 60); }

TEST(NegativesSnapshot, TrainingRunRecordsAndPublishesSnapshots) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data");
  TrainConfig config;
  config.dataset = dir / "data";
  config.edit<EncoderOptions>().dim = 16;
  config.batch_size = 32;
  config.epochs = 2;
  config.threads = 1;
  config.edit<QueryBatcherOptions>().type = "cluster";
  config.edit<ClusterBatchOptions>().cluster_size = 4;
  config.eval_k = {1, 3};
  config.eval_top = 5;
  const auto db = dir / "runs.sqlite";
  TrainingRun run(config, db);
  std::vector<std::string> published;
  run.subscribe([&](const TrainEvent& e) {
    if (e.kind == TrainEvent::Kind::Snapshot) published.push_back(e.message);
  });
  run.run();
  ASSERT_EQ(published.size(), 2u);  // after epoch 1 and at the final evaluation

  const Dataset data = load_dataset(dir / "data", {.load_features = false});
  std::int64_t expected_query = -1;
  for (std::int64_t r = 0; r < data.num_train() && expected_query < 0; ++r)
    if (data.train_labels.row_size(r) >= 3) expected_query = r;
  ASSERT_GE(expected_query, 0);

  const auto stored = RunStore(db).latest_tsne_snapshot(run.run_id());
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->query, expected_query);
  EXPECT_EQ(stored->epoch, 2.0);
  EXPECT_EQ(stored->payload_json, published.back());
  const json snapshot = json::parse(stored->payload_json);
  EXPECT_EQ(snapshot["query"], expected_query);
  EXPECT_EQ(snapshot["query_text"], data.train_text[static_cast<std::size_t>(expected_query)]);
  EXPECT_GT(snapshot["batch_queries"].get<std::int64_t>(), 1);
  auto groups = groups_of(snapshot);
  for (const auto& [name, members] : groups)
    EXPECT_TRUE(std::find(std::begin(kSnapshotGroups), std::end(kSnapshotGroups), name) != std::end(kSnapshotGroups)) << name;
  EXPECT_EQ(groups["query"].size(), 1u);
  EXPECT_EQ(static_cast<std::int64_t>(groups["positive"].size()), data.train_labels.row_size(expected_query));
  // 12 labels: the top-50 hard negatives take every non-positive label, split between ann_hard and
  // missed_hard; the in-batch negatives of a 32-query batch cover most labels.
  EXPECT_EQ(groups["ann_hard"].size() + groups["missed_hard"].size(), 12u - groups["positive"].size());
  EXPECT_FALSE(groups["ann_hard"].empty());
  EXPECT_EQ(snapshot["points"].size(), 13u);

  // Stopped mid-epoch by max_steps: the snapshot uses the current epoch's batches.
  config.epochs = 1;
  config.max_steps = 3;
  config.tsne_query = 5;
  TrainingRun stopped(config, db);
  EXPECT_EQ(stopped.run().outcome, RunOutcome::Stopped);
  const auto mid = RunStore(db).latest_tsne_snapshot(stopped.run_id());
  ASSERT_TRUE(mid.has_value());
  EXPECT_EQ(mid->query, 5);
  EXPECT_GT(json::parse(mid->payload_json)["batch_queries"].get<std::int64_t>(), 1);
  config.max_steps = 0;
  config.tsne_query = -1;

  // tsne.every = 0 turns them off; a bad tsne.query fails the run naming the key.
  config.tsne_every = 0;
  TrainingRun off(config, db);
  int snapshots = 0;
  off.subscribe([&](const TrainEvent& e) { snapshots += e.kind == TrainEvent::Kind::Snapshot; });
  off.run();
  EXPECT_EQ(snapshots, 0);
  EXPECT_FALSE(RunStore(db).latest_tsne_snapshot(off.run_id()).has_value());
  config.tsne_every = 1;
  config.tsne_query = 100000;
  TrainingRun bad(config, db);
  try {
    bad.run();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tsne.query"), std::string::npos) << e.what();
  }
}

TEST(NegativesSnapshot, ConfigKeysAreListed) {
  std::set<std::string> keys;
  for (const auto& k : train_config_keys()) keys.insert(k.key);
  EXPECT_TRUE(keys.contains("tsne.query") && keys.contains("tsne.every"));
  TrainConfig c = parse_train_config(R"({"tsne": {"query": 5, "every": 2}})");
  EXPECT_EQ(c.tsne_query, 5);
  EXPECT_EQ(c.tsne_every, 2);
  EXPECT_THROW(parse_train_config(R"({"tsne.every": -1})"), ConfigError);
}

}  // namespace
}  // namespace xmc
