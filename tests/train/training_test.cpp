// End-to-end training on small synthetic data: learning happens, runs are recorded, checkpoints resume
// bit-for-bit, failures are recorded without losing what was written.
#include <gtest/gtest.h>
#include <set>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

#include "engine/optim/optim_options.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/records/system_use.h"
#include "engine/store/run_store.h"
#include "engine/method/method.h"
#include "engine/core/memory_budget.h"
#include "engine/method/method_registry.h"
#include "engine/method/trained_run.h"
#include "engine/method/checkpoint.h"
#include "engine/train/training_run.h"
#include "engine/model/transformer_options.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/negatives_options.h"
#include "engine/method/ngame/ngame_options.h"
#include "engine/sampler/psl_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

void write_synthetic_dataset(const std::filesystem::path& dir, std::uint64_t seed) {
  test::write_keyword_dataset(dir, seed, 400, 120);
}

TrainConfig small_config(const std::filesystem::path& data) {
  TrainConfig c;
  c.dataset = data;
  c.edit<EncoderOptions>().dim = 32;
  c.batch_size = 32;
  c.epochs = 4;
  c.lr = 0.01;
  c.threads = 1;
  c.eval_k = {1, 3, 5};
  c.eval_top = 10;
  return c;
}

/// small_config() on a keyword dataset written into `dir`, for `method` with `negatives`.
TrainConfig method_config(const std::filesystem::path& dir, const std::string& method, const std::string& negatives, std::int64_t epochs,
                          std::int64_t eval_every) {
  write_synthetic_dataset(dir / "data", 2);
  TrainConfig config = small_config(dir / "data");
  config.epochs = epochs;
  config.eval_every = eval_every;
  config.method = method;
  config.edit<NegativesOptions>().kind = negatives;
  return config;
}

/// method_config() for 3 epochs of `method` with hard negatives, its shortlists refreshed at every epoch's start and its
/// batches made of query clusters (of 4) from epoch 2 on.
TrainConfig refreshed_and_clustered_every_epoch(const std::filesystem::path& dir, const std::string& method) {
  TrainConfig config = method_config(dir, method, "hard", 3, 0);
  config.edit<PslOptions>().refresh_every = 1;  // UniDEC's refresh window
  config.edit<NegativesOptions>().refresh_every = 1;  // DEXML's and NGAME's
  config.edit<QueryBatcherOptions>().type = "cluster";
  config.edit<ClusterBatchOptions>().cluster_size = 4;
  config.edit<ClusterBatchOptions>().start_epoch = 1;
  return config;
}

// Every tensor of a (nested) archive, in key order.
void collect_tensors(torch::serialize::InputArchive& archive, std::vector<torch::Tensor>& out) {
  for (const auto& key : archive.keys()) {
    torch::Tensor t;
    torch::serialize::InputArchive child;
    if (archive.try_read(key, t)) out.push_back(t);
    else if (archive.try_read(key, child)) collect_tensors(child, out);
  }
}

std::vector<torch::Tensor> checkpoint_parameters(const std::filesystem::path& path) {
  torch::serialize::InputArchive archive;
  archive.load_from(path.string());
  torch::serialize::InputArchive model;
  archive.read("model", model);
  std::vector<torch::Tensor> out;
  collect_tensors(model, out);
  return out;
}

/// The final checkpoint's parameters of run `run` in `db`.
std::vector<torch::Tensor> final_parameters(const std::filesystem::path& db, std::int64_t run) {
  return checkpoint_parameters(TrainingRun::run_directory(db, run) / "checkpoint.pt");
}

/// Run `run` of `db` ended with parameters `expected` and the metrics of `reference` (`result` is its own), bit for bit.
void expect_same_end(const std::vector<torch::Tensor>& expected, const TrainResult& reference, const std::filesystem::path& db, std::int64_t run,
                     const TrainResult& result) {
  const auto parameters = final_parameters(db, run);
  ASSERT_EQ(expected.size(), parameters.size());
  ASSERT_FALSE(expected.empty());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(torch::equal(expected[i], parameters[i])) << "parameter " << i;
  for (const auto& [name, value] : reference.metrics.metrics) EXPECT_EQ(value, result.metrics.get(name)) << name;
}

/// Resumes run `run` of `db` to its end; `first_step` gets the first step it trained (-1: none).
TrainResult resume_to_the_end(const std::filesystem::path& db, std::int64_t run, std::int64_t& first_step) {
  first_step = -1;
  TrainingRun resumed = TrainingRun::resume(run, db);
  resumed.subscribe([&](const TrainEvent& e) {
    if (e.kind == TrainEvent::Kind::Step && first_step < 0) first_step = e.step;
  });
  return resumed.run();
}

/// Run `run` of `db`, stopped after `steps` steps, logged `message` last; resumed, it trains on from step `steps` + 1
/// and ends with the uninterrupted run's parameters (`expected`) and metrics (`reference`), bit for bit.
void expect_stop_logged_and_resumed_to_the_end(const std::filesystem::path& db, std::int64_t run, const std::string& message, std::int64_t steps,
                                               const std::vector<torch::Tensor>& expected, const TrainResult& reference) {
  const auto log = RunStore(db).log(run);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log.back().message.find(message), std::string::npos) << log.back().message;
  std::int64_t first_step_after_resume = -1;
  const TrainResult resumed = resume_to_the_end(db, run, first_step_after_resume);
  ASSERT_EQ(resumed.outcome, RunOutcome::Completed);
  EXPECT_EQ(first_step_after_resume, steps + 1);
  expect_same_end(expected, reference, db, run, resumed);
}

}  // namespace

TEST(Training, DexmlLearnsAndRecordsTheRun) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 1);
  const auto db = dir / "runs.sqlite";
  TrainingRun run(small_config(dir / "data"), db);
  int steps = 0, evaluations = 0;
  run.subscribe([&](const TrainEvent& e) {
    steps += e.kind == TrainEvent::Kind::Step;
    evaluations += e.kind == TrainEvent::Kind::Evaluation;
  });
  const TrainResult result = run.run();
  EXPECT_EQ(result.outcome, RunOutcome::Completed);
  EXPECT_GT(result.metrics.get("P@1"), 0.6) << "random ranking scores 2/12";
  // 400 queries / 32 = 12.5 -> 13 batches per epoch (the last, 16 queries, is kept), 4 epochs.
  EXPECT_EQ(steps, 13 * 4);
  EXPECT_EQ(evaluations, 4);  // after each epoch, the last one being the final evaluation

  RunStore store(db);
  const RunInfo info = store.get_run(run.run_id());
  EXPECT_EQ(info.status, RunStatus::Completed);
  EXPECT_EQ(store.scalars(run.run_id(), "loss").size(), 52u);
  // The process's use of the machine: a sample at each of the 4 epochs' ends (the run is shorter than the 10 s
  // between periodic ones), the last replaced by the one after the final evaluation at the same step: one per
  // step; memory at least what the model needs, some CPU used.
  const auto memory = store.scalars(run.run_id(), "system/memory_gb");
  EXPECT_GE(memory.size(), 4u);
  for (std::size_t i = 1; i < memory.size(); ++i) EXPECT_LT(memory[i - 1].step, memory[i].step);
  EXPECT_EQ(store.scalars(run.run_id(), "system/cpu_cores").size(), memory.size());
  for (const ScalarPoint& p : memory) EXPECT_GT(p.value, 0.01) << p.step;
  EXPECT_EQ(memory.back().step, 52);
  const SystemUse use = summarize_system_use(store.scalars_with_prefix(run.run_id(), "system/"));
  ASSERT_TRUE(use.peak_memory_gb && use.mean_cpu_cores);
  EXPECT_GE(*use.peak_memory_gb, memory.back().value);
  EXPECT_GT(*use.mean_cpu_cores, 0.0);
  const auto deciles = store.latest_decile_table(run.run_id(), "P@5");
  ASSERT_EQ(deciles.size(), 10u);
  double sum = 0;
  for (double v : deciles) sum += v;
  EXPECT_NEAR(sum, result.metrics.get("P@5"), 1e-9);
  EXPECT_TRUE(std::filesystem::exists(TrainingRun::run_directory(db, run.run_id()) / "checkpoint.pt"));
}

TEST(Training, EvaluationSearchesThroughTheConfiguredIndex) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 1);
  TrainConfig config = small_config(dir / "data");
  config.epochs = 2;
  // 12 labels: HNSW's graph holds every label within ef_search, so it finds exactly what exact search finds.
  const TrainResult exact = TrainingRun(config, dir / "exact.sqlite").run();
  config.eval_index = "hnsw";
  const TrainResult hnsw = TrainingRun(config, dir / "hnsw.sqlite").run();
  for (const char* metric : {"P@1", "P@5", "nDCG@5"}) EXPECT_DOUBLE_EQ(hnsw.metrics.get(metric), exact.metrics.get(metric)) << metric;
  // An inverted file that searches every one of its clusters is exact too.
  config.eval_index = "ivf:probe=1000";
  const TrainResult ivf = TrainingRun(config, dir / "ivf.sqlite").run();
  for (const char* metric : {"P@1", "P@5", "nDCG@5"}) EXPECT_DOUBLE_EQ(ivf.metrics.get(metric), exact.metrics.get(metric)) << metric;
  // An approximate search logs its recall against exact at each evaluation (here every one of the test queries
  // is sampled, and all of the exact top 10 is found); an exact one logs none. eval.index auto goes approximate
  // from eval.approximate_above labels (12 here).
  const auto recall_lines = [](const std::filesystem::path& db) {
    std::vector<std::string> lines;
    for (const LogLine& line : RunStore(db).log(1))
      if (line.message.find("recall") != std::string::npos) lines.push_back(line.message);
    return lines;
  };
  const std::int64_t test_rows = load_dataset(dir / "data").num_test();
  const std::string exact_recall = "evaluation (embedding): ivf:probe=1000 search, recall@10 1.000 against exact on " + std::to_string(test_rows) +
                                   " sampled test queries";
  EXPECT_EQ(recall_lines(dir / "ivf.sqlite"), std::vector<std::string>(2, exact_recall)) << "one line per evaluation, two epochs";
  EXPECT_TRUE(recall_lines(dir / "exact.sqlite").empty());
  config.eval_index = "auto";
  config.eval_approximate_above = 13;
  const TrainResult below = TrainingRun(config, dir / "auto-exact.sqlite").run();
  EXPECT_TRUE(recall_lines(dir / "auto-exact.sqlite").empty()) << "12 labels, approximate from 13: exact";
  config.eval_approximate_above = 12;
  const TrainResult above = TrainingRun(config, dir / "auto-ivf.sqlite").run();
  const std::vector<std::string> auto_lines = recall_lines(dir / "auto-ivf.sqlite");
  ASSERT_EQ(auto_lines.size(), 3u) << "the switch announced, then two evaluations";
  EXPECT_EQ(auto_lines[0], "evaluations search the labels through an inverted file (ivf; eval.index auto: 12 labels, from eval.approximate_above 12), "
                           "its probe tuned to the fewest clusters that keep 0.95 of the exact top 10 (exact search when half the clusters do not), the recall logged");
  // 12 labels make one cluster: the probe starts at it (64 clusters are not there to search) and keeps the whole top 10,
  // so the calibration keeps the inverted file.
  EXPECT_EQ(auto_lines[1], "evaluation (embedding): ivf search at probe 1 of 1 cluster kept 1.000 of the exact top 10 on " + std::to_string(test_rows) +
                               " test queries; recall@10 1.000 against exact on " + std::to_string(test_rows) + " sampled test queries");
  for (const char* metric : {"P@1", "P@5"}) {
    EXPECT_DOUBLE_EQ(below.metrics.get(metric), exact.metrics.get(metric)) << metric;
    EXPECT_DOUBLE_EQ(above.metrics.get(metric), exact.metrics.get(metric)) << metric << ": 12 labels make one cluster, searched whole";
  }
  config.eval_index = "annoy";
  try {
    TrainingRun(config, dir / "bad.sqlite").run();
    FAIL() << "an unknown index kind must be refused";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("eval.index: \"annoy\" is not an index description", 0), 0u) << e.what();
  }
  EXPECT_TRUE(RunStore(dir / "bad.sqlite").list_runs().empty()) << "a refused config records no run";
}

TEST(Training, TheRunsMemoryBudgetIsSetAndLoggedAndTooLittleIsRefused) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 1);
  TrainConfig config = small_config(dir / "data");
  config.epochs = 1;
  config.memory_mb = 48;
  TrainingRun run(config, dir / "runs.sqlite");
  run.run();
  EXPECT_EQ(memory_budget_bytes(), 48 << 20);
  bool logged = false;
  for (const LogLine& line : RunStore(dir / "runs.sqlite").log(run.run_id())) logged |= line.message == "memory budget of the temporaries: 48 MB (memory_mb)";
  EXPECT_TRUE(logged) << "the run's log says what budget it ran under";
  set_memory_budget_mb(0);

  config.memory_mb = 8;
  try {
    TrainingRun(config, dir / "bad.sqlite").run();
    FAIL() << "8 MB must be refused";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("memory_mb: 8 MB is too little for the temporaries: at least 32, or 0 for this machine's default (", 0), 0u)
        << e.what();
  }
  EXPECT_TRUE(RunStore(dir / "bad.sqlite").list_runs().empty()) << "a refused config records no run";
}

TEST(Training, ResumeRefusesACheckpointOfAnotherRunsDataset) {
  // A checkpoint whose saved batches name rows the dataset does not have once crashed the resume.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "big", 3, 300, 30);
  test::write_keyword_dataset(dir / "small", 4, 40, 30);
  auto stopped_run = [&](const std::string& data) {
    TrainConfig c = small_config(dir / data);
    c.eval_every = 0;
    TrainingRun run(c, dir / (data + ".sqlite"));
    run.subscribe([&run](const TrainEvent& e) {
      if (e.kind == TrainEvent::Kind::Step && e.step == 2) run.request_stop();
    });
    EXPECT_EQ(run.run().outcome, RunOutcome::Stopped);
    return TrainingRun::run_directory(dir / (data + ".sqlite"), run.run_id());
  };
  const auto big = stopped_run("big");
  const auto small = stopped_run("small");
  std::filesystem::copy_file(big / "checkpoint.pt", small / "checkpoint.pt", std::filesystem::copy_options::overwrite_existing);
  try {
    TrainingRun::resume(1, dir / "small.sqlite").run();
    FAIL() << "resumed from another run's checkpoint";
  } catch (const std::exception& e) {
    // Both are run 1, of two stores: the checkpoint names its store, and is refused before any row is read.
    EXPECT_NE(std::string(e.what()).find("this checkpoint is run 1's of store " + RunStore(dir / "big.sqlite").store_id() + ", not run 1's of store " +
                                         RunStore(dir / "small.sqlite").store_id()),
              std::string::npos)
        << e.what();
  }
  // Without its owner check (a checkpoint of an earlier version records none) it is still refused: its
  // vocabulary (and so its word-vector table) has another size.
  TrainConfig config = small_config(dir / "small");
  std::unique_ptr<Method> method = make_method(component_config(config));
  method->build({}, small);
  try {
    load_checkpoint(small / "checkpoint.pt", *method, load_dataset(dir / "small").num_labels());
    FAIL() << "loaded another dataset's checkpoint";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the checkpoint belongs to another run or configuration"), std::string::npos) << e.what();
  }
}

// torch's loader replaces a parameter by a saved tensor of another shape without a word; a byte flipped in
// the tensor data loads as a different number. Both are refused by name.
TEST(Training, CheckpointsOfAnotherShapeOrWithDamagedTensorsAreRefused) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 200, 30);
  TrainConfig config = small_config(dir / "data");
  config.eval_every = 0;
  config.epochs = 1;
  TrainingRun run(config, dir / "runs.sqlite");
  run.run();
  const auto run_dir = TrainingRun::run_directory(dir / "runs.sqlite", run.run_id());
  const auto checkpoint = run_dir / "checkpoint.pt";
  const Dataset data = load_dataset(dir / "data");

  TrainConfig wider = config;
  wider.edit<EncoderOptions>().dim = 48;
  std::unique_ptr<Method> other = make_method(component_config(wider));
  other->build({}, run_dir);
  try {
    load_checkpoint(checkpoint, *other, data.num_labels());
    FAIL() << "a dim-32 checkpoint loaded into a dim-48 model";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("of shape [" ), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("belongs to another run or configuration"), std::string::npos) << e.what();
  }

  // Flip one byte inside the word vectors' data (found by their first 16 bytes in the file).
  std::unique_ptr<Method> same = make_method(component_config(config));
  same->build({}, run_dir);
  load_checkpoint(checkpoint, *same, data.num_labels());
  const torch::Tensor words = same->module().named_parameters()["encoder.embeddings.weight"].contiguous();
  const std::string needle(static_cast<const char*>(words.data_ptr()), 16);
  std::string bytes;
  {
    std::ifstream in(checkpoint, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 40] = static_cast<char>(bytes[at + 40] ^ 0x10);
  {
    std::ofstream out(checkpoint, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  std::unique_ptr<Method> fresh = make_method(component_config(config));
  fresh->build({}, run_dir);
  try {
    load_checkpoint(checkpoint, *fresh, data.num_labels());
    FAIL() << "a checkpoint with a flipped byte loaded";
  } catch (const InputError& e) {
    // The archive's own CRC-32 of that tensor's entry catches it before LibTorch reads it.
    EXPECT_NE(std::string(e.what()).find(checkpoint.string() + ": is damaged: entry "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fails its CRC-32 check"), std::string::npos) << e.what();
  }
  // One byte flipped anywhere in the file's body (optimizer moments, sampler state, RNG, not only parameters) is
  // refused too: it loaded as good before the entries' CRCs were checked.
  bytes[at + 40] = static_cast<char>(bytes[at + 40] ^ 0x10);  // undo the first flip
  for (const double where : {0.2, 0.35, 0.5, 0.65, 0.8}) {
    std::string flipped = bytes;
    const auto i = static_cast<std::size_t>(where * static_cast<double>(flipped.size()));
    flipped[i] = static_cast<char>(flipped[i] ^ 0x01);
    { std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << flipped; }
    EXPECT_THROW(load_checkpoint(checkpoint, *fresh, data.num_labels()), InputError) << "byte " << i << " of " << flipped.size();
  }
  { std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << bytes; }
  EXPECT_NO_THROW(load_checkpoint(checkpoint, *fresh, data.num_labels())) << "the intact bytes load";
}

// A store recreated in the same place numbers its runs from 1 again: the new run 1 must not take up the
// old run 1's folder (its vocabulary, its checkpoint). The old folder is moved aside, not deleted.
TEST(Training, ARecreatedStoreNeverUsesTheOldStoresRunFolders) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 200, 30);
  TrainConfig config = small_config(dir / "data");
  config.eval_every = 0;
  config.epochs = 1;
  const auto db = dir / "runs.sqlite";
  { TrainingRun(config, db).run(); }
  const auto folder = TrainingRun::run_directory(db, 1);
  const std::string old_store = RunStore(db).store_id();
  std::filesystem::remove(db);
  std::filesystem::remove(db.string() + "-wal");
  std::filesystem::remove(db.string() + "-shm");
  // Someone planted a vocabulary the new run would have read.
  { std::ofstream(folder / "vocab.txt") << "planted\n"; }
  TrainingRun again(config, db);
  EXPECT_EQ(again.run_id(), 1);
  EXPECT_NE(RunStore(db).store_id(), old_store);
  EXPECT_EQ(again.run().outcome, RunOutcome::Completed);
  std::ifstream identity(folder / "run-identity.json");
  std::stringstream text;
  text << identity.rdbuf();
  EXPECT_NE(text.str().find(RunStore(db).store_id()), std::string::npos) << text.str();
  int stale = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder.parent_path()))
    if (entry.path().filename().string().rfind("1.stale-", 0) == 0) {
      ++stale;
      EXPECT_TRUE(std::filesystem::exists(entry.path() / "checkpoint.pt")) << "the old run's files are kept aside";
    }
  EXPECT_EQ(stale, 1);
  // A trained bow run whose vocabulary went missing is refused, naming the file (its token ids would be lost).
  {
    const auto vocabulary = TrainingRun::run_directory(db, again.run_id()) / "vocab.txt";
    std::filesystem::rename(vocabulary, dir / "vocab.kept");
    try {
      load_trained_run(db, again.run_id());
      FAIL() << "loaded a bow run without its vocabulary";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(vocabulary.string() + ": no such file: the run's vocabulary is missing"), std::string::npos) << e.what();
    }
    std::filesystem::rename(dir / "vocab.kept", vocabulary);
  }
  // A folder marked for another store is refused by name when a run's files are used.
  { std::ofstream(folder / "run-identity.json", std::ios::trunc) << R"({"store": "0123", "run": 1})"; }
  try {
    TrainingRun::resume(1, db);
    FAIL() << "used a folder that belongs to another store";
  } catch (const std::exception& e) {
    // A completed run is refused first; the folder check shows with the predictor's loader.
    EXPECT_NE(std::string(e.what()).find("already completed"), std::string::npos) << e.what();
  }
  try {
    load_trained_run(db, 1);
    FAIL() << "loaded a run from a folder that belongs to another store";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("this folder belongs to run 1 of store 0123"), std::string::npos) << e.what();
  }
}

TEST(Training, ResumeContinuesBitForBit) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 2);
  TrainConfig config = small_config(dir / "data");
  config.epochs = 3;
  config.edit<QueryBatcherOptions>().type = "cluster";
  config.edit<ClusterBatchOptions>().cluster_size = 4;
  config.edit<ClusterBatchOptions>().start_epoch = 1;
  config.eval_every = 0;

  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();

  // Stop after 1.5 epochs (20 of 39 steps), then resume to the end.
  config.max_steps = 20;
  TrainingRun first(config, dir / "b.sqlite");
  EXPECT_EQ(first.run().outcome, RunOutcome::Stopped);
  EXPECT_EQ(RunStore(dir / "b.sqlite").get_run(first.run_id()).status, RunStatus::Stopped);
  {  // the run's log says where and why it stopped
    const auto log = RunStore(dir / "b.sqlite").log(first.run_id());
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().message, "stopped after max_steps = 20 (checkpoint written)");
    EXPECT_EQ(log.back().step, 20);
  }
  TrainingRun second = TrainingRun::resume(first.run_id(), dir / "b.sqlite", {"max_steps=0"});
  const TrainResult b = second.run();
  ASSERT_EQ(b.outcome, RunOutcome::Completed);

  // Two stores in one folder keep their runs' files apart (both runs have id 1).
  ASSERT_NE(TrainingRun::run_directory(dir / "a.sqlite", whole.run_id()), TrainingRun::run_directory(dir / "b.sqlite", first.run_id()));
  const auto pa = checkpoint_parameters(TrainingRun::run_directory(dir / "a.sqlite", whole.run_id()) / "checkpoint.pt");
  const auto pb = checkpoint_parameters(TrainingRun::run_directory(dir / "b.sqlite", first.run_id()) / "checkpoint.pt");
  ASSERT_EQ(pa.size(), pb.size());
  ASSERT_FALSE(pa.empty());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
  for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, b.metrics.get(name)) << name;

  // The same with each next batch prepared while a step trains (prefetch=on): the stop leaves a prepared
  // batch behind, whose label-pool draws the checkpoint must not keep.
  config.prefetch = "on";
  TrainingRun third(config, dir / "c.sqlite");
  EXPECT_EQ(third.run().outcome, RunOutcome::Stopped);
  TrainingRun fourth = TrainingRun::resume(third.run_id(), dir / "c.sqlite", {"max_steps=0"});
  const TrainResult c = fourth.run();
  ASSERT_EQ(c.outcome, RunOutcome::Completed);
  const auto pc = checkpoint_parameters(TrainingRun::run_directory(dir / "c.sqlite", third.run_id()) / "checkpoint.pt");
  ASSERT_EQ(pa.size(), pc.size());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pc[i])) << "parameter " << i << " with prefetching";
  for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, c.metrics.get(name)) << name << " with prefetching";
}

// Evaluations between epochs write the optimiser's moments and the hard-negative shortlists to a file beside the
// checkpoint and read them back after (eval.set_aside_mb): the run trains on exactly as one that keeps them in
// memory. When the file cannot be written the run evaluates with them in memory; when it cannot be read back the
// run fails, naming the file, and its last checkpoint is left as it was.
TEST(Training, StateSetAsideDuringEvaluationsComesBackBitForBit) {
  for (const std::string method : {"unidec", "dexml"}) {
    SCOPED_TRACE(method);
    test::TempDir dir;
    TrainConfig config = method_config(dir.path(), method, "hard", 3, 1);
    const auto set_aside_lines = [](const std::filesystem::path& db, std::int64_t run) {
      std::vector<std::string> out;
      for (const LogLine& line : RunStore(db).log(run))
        if (line.message.find("of optimiser moments and shortlists set aside in evaluation-set-aside.bin") != std::string::npos) out.push_back(line.message);
      return out;
    };

    config.eval_set_aside_mb = 1 << 20;  // never
    TrainingRun kept(config, dir / "a.sqlite");
    const TrainResult a = kept.run();
    ASSERT_EQ(a.outcome, RunOutcome::Completed);
    EXPECT_TRUE(set_aside_lines(dir / "a.sqlite", kept.run_id()).empty());

    config.eval_set_aside_mb = 0;  // always
    TrainingRun aside(config, dir / "b.sqlite");
    const TrainResult b = aside.run();
    ASSERT_EQ(b.outcome, RunOutcome::Completed);
    const std::vector<std::string> lines = set_aside_lines(dir / "b.sqlite", aside.run_id());
    ASSERT_GE(lines.size(), 2U);  // the evaluations after epochs 1 and 2 at least
    EXPECT_EQ(lines.front().rfind("evaluation: ", 0), 0U) << lines.front();
    EXPECT_NE(lines.front().find(" MB of optimiser moments"), std::string::npos) << lines.front();
    EXPECT_NE(lines.front().find("until it ends (eval.set_aside_mb 0)"), std::string::npos) << lines.front();
    const auto run_dir = TrainingRun::run_directory(dir / "b.sqlite", aside.run_id());
    EXPECT_FALSE(std::filesystem::exists(run_dir / "evaluation-set-aside.bin"));
    const auto pa = checkpoint_parameters(TrainingRun::run_directory(dir / "a.sqlite", kept.run_id()) / "checkpoint.pt");
    const auto pb = checkpoint_parameters(run_dir / "checkpoint.pt");
    ASSERT_EQ(pa.size(), pb.size());
    ASSERT_FALSE(pa.empty());
    for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
    for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, b.metrics.get(name)) << name;

    // The file cannot be written (a folder stands where it goes): evaluated with the state in memory, same run.
    TrainingRun blocked(config, dir / "c.sqlite");
    const auto blocked_dir = TrainingRun::run_directory(dir / "c.sqlite", blocked.run_id());
    // One left by a process killed while it evaluated goes when a run starts in the folder.
    std::filesystem::create_directories(blocked_dir);
    std::ofstream(blocked_dir / "evaluation-set-aside.bin") << "left over";
    bool stale_file_removed = false;
    blocked.subscribe([&](const TrainEvent& e) {
      if (e.kind != TrainEvent::Kind::EpochEnd) return;
      if (e.epoch < 1.5) stale_file_removed = !std::filesystem::exists(blocked_dir / "evaluation-set-aside.bin");
      std::filesystem::create_directories(blocked_dir / "evaluation-set-aside.bin");
    });
    const TrainResult c = blocked.run();
    ASSERT_EQ(c.outcome, RunOutcome::Completed);
    EXPECT_TRUE(set_aside_lines(dir / "c.sqlite", blocked.run_id()).empty());
    bool said = false;
    for (const LogLine& line : RunStore(dir / "c.sqlite").log(blocked.run_id()))
      said |= line.message.find("could not set ") == 0 && line.message.find("evaluation-set-aside.bin") != std::string::npos &&
              line.message.find("; evaluating with them in memory") != std::string::npos;
    EXPECT_TRUE(said);
    EXPECT_TRUE(stale_file_removed);
    const auto pc = checkpoint_parameters(blocked_dir / "checkpoint.pt");
    for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pc[i])) << "parameter " << i << " kept in memory";

    // The file is gone when the evaluation ends: the run fails, naming it, and writes no checkpoint over the last one.
    config.checkpoint_every = 1;
    TrainingRun lost(config, dir / "d.sqlite");
    const auto lost_dir = TrainingRun::run_directory(dir / "d.sqlite", lost.run_id());
    std::string checkpoint_before;
    int set_asides = 0;
    lost.subscribe([&](const TrainEvent& e) {
      if (e.kind != TrainEvent::Kind::Phase || e.message.find("set aside in evaluation-set-aside.bin") == std::string::npos || ++set_asides != 2) return;
      std::ifstream in(lost_dir / "checkpoint.pt", std::ios::binary);
      checkpoint_before.assign(std::istreambuf_iterator<char>(in), {});
      std::filesystem::remove(lost_dir / "evaluation-set-aside.bin");
    });
    try {
      lost.run();
      ADD_FAILURE() << "the run went on without its optimiser state";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("could not read the training state set aside during the evaluation back from " + (lost_dir / "evaluation-set-aside.bin").string()),
                std::string::npos) << what;
    }
    EXPECT_EQ(RunStore(dir / "d.sqlite").get_run(lost.run_id()).status, RunStatus::Failed);
    ASSERT_FALSE(checkpoint_before.empty());  // the checkpoint after epoch 1, taken when epoch 2's evaluation set the state aside
    std::ifstream in(lost_dir / "checkpoint.pt", std::ios::binary);
    EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == checkpoint_before);
  }
}

// A checkpoint brings the deferred rows up to date, and a row brought up in two parts rounds otherwise than in one:
// checkpoints placed by time made a run's numbers depend on the machine's speed. Every run brings them up every
// deferred_sync_steps steps, and a time-placed checkpoint waits for such a step: a checkpoint due at every step then
// changes nothing.
TEST(Training, CheckpointsPlacedByTimeChangeNothingInARunWithDeferredRows) {
  test::TempDir dir;
  TrainConfig config = method_config(dir.path(), "unidec", "hard", 3, 0);
  config.edit<OptimOptions>().deferred_rows_from = 10;  // the word table and the classifiers take deferred updates
  config.edit<OptimOptions>().deferred_sync_steps = 4;
  config.checkpoint_every_minutes = 0;
  TrainingRun plain(config, dir / "a.sqlite");
  const TrainResult a = plain.run();
  ASSERT_EQ(a.outcome, RunOutcome::Completed);

  config.checkpoint_every_minutes = 1e-9;  // due at every step
  TrainingRun timed(config, dir / "b.sqlite");
  std::vector<std::int64_t> timed_checkpoints;  // those not at an epoch's end (checkpoint.every) or the run's
  std::set<std::int64_t> epoch_ends;
  bool deferred = false;
  timed.subscribe([&](const TrainEvent& e) {
    if (e.kind == TrainEvent::Kind::EpochEnd) epoch_ends.insert(e.step);
    if (e.kind == TrainEvent::Kind::Checkpoint && epoch_ends.count(e.step) == 0) timed_checkpoints.push_back(e.step);
    if (e.kind == TrainEvent::Kind::Phase && e.message.rfind("AdamW defers the untouched rows of", 0) == 0) deferred = true;
  });
  const TrainResult b = timed.run();
  ASSERT_EQ(b.outcome, RunOutcome::Completed);
  EXPECT_TRUE(deferred);
  ASSERT_GE(timed_checkpoints.size(), 3U);
  for (const std::int64_t step : timed_checkpoints) EXPECT_EQ(step % 4, 0) << "a time-placed checkpoint at step " << step;

  expect_same_end(final_parameters(dir / "a.sqlite", plain.run_id()), a, dir / "b.sqlite", timed.run_id(), b);
}

// A stop asked for while an epoch's batches are made (UniDEC's query clustering and shortlist refresh, 10 minutes at
// 2.25M queries) ends that work instead of waiting for it: the sampler goes back to where it stood, the checkpoint
// resumes at the epoch's start, and the resumed run reaches the uninterrupted run's parameters and metrics.
TEST(Training, AStopWhileAnEpochsShortlistsOrClustersAreMadeResumesToTheUninterruptedResult) {
  test::TempDir dir;
  const TrainConfig config = refreshed_and_clustered_every_epoch(dir.path(), "unidec");
  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();
  ASSERT_EQ(a.outcome, RunOutcome::Completed);
  const auto pa = final_parameters(dir / "a.sqlite", whole.run_id());
  ASSERT_FALSE(pa.empty());

  // Stopped when epoch 2's shortlist refresh (the second), or epoch 2's clustering (the first: its queries are
  // encoded just before), begins.
  for (const auto& [phase, nth] : std::vector<std::pair<std::string, int>>{{"refreshing hard-negative shortlists", 2}, {"encoding training queries", 1}}) {
    SCOPED_TRACE("stopped at \"" + phase + "\" number " + std::to_string(nth));
    const auto db = dir / (std::to_string(phase.size()) + ".sqlite");
    TrainingRun stopped(config, db);
    int seen = 0;
    std::int64_t steps = 0;
    bool epoch_two_trained = false;
    stopped.subscribe([&](const TrainEvent& e) {
      if (e.kind == TrainEvent::Kind::Step) steps = e.step;
      if (e.kind == TrainEvent::Kind::Phase && e.message == "epoch 2/3") epoch_two_trained = true;
      if (e.kind == TrainEvent::Kind::Phase && e.message == phase && ++seen == nth) stopped.request_stop();
    });
    ASSERT_EQ(stopped.run().outcome, RunOutcome::Stopped);
    EXPECT_FALSE(epoch_two_trained);
    expect_stop_logged_and_resumed_to_the_end(db, stopped.run_id(),
                                              "stopped before epoch 2's training, while its batches or shortlists were made, at step " + std::to_string(steps),
                                              steps, pa, a);
  }
}

// A stop asked for while a method that cannot cut them short makes an epoch's batches (DEXML's and NGAME's query
// clustering and shortlist refresh) takes effect at the epoch's first step: the checkpoint holds the batches drawn,
// and the resume trains on them instead of drawing others, to the uninterrupted run's result.
TEST(Training, AStopWhileDexmlOrNgameClusterAnEpochResumesOnTheBatchesDrawn) {
  for (const std::string method : {"dexml", "ngame"}) {
    SCOPED_TRACE(method);
    test::TempDir dir;
    const TrainConfig config = refreshed_and_clustered_every_epoch(dir.path(), method);
    TrainingRun whole(config, dir / "a.sqlite");
    const TrainResult a = whole.run();
    ASSERT_EQ(a.outcome, RunOutcome::Completed);
    const auto pa = final_parameters(dir / "a.sqlite", whole.run_id());

    // Stopped as epoch 2's queries are encoded for its clustering: the clustering and refresh finish, the first
    // step does not run.
    const auto db = dir / "stopped.sqlite";
    TrainingRun stopped(config, db);
    std::int64_t steps = 0;
    bool stop_asked = false;
    bool stepped_after_stop = false;
    stopped.subscribe([&](const TrainEvent& e) {
      if (e.kind == TrainEvent::Kind::Step) {
        stepped_after_stop = stepped_after_stop || stop_asked;
        steps = e.step;
      }
      if (e.kind == TrainEvent::Kind::Phase && e.message == "encoding training queries" && !stop_asked) {
        stop_asked = true;
        stopped.request_stop();
      }
    });
    ASSERT_EQ(stopped.run().outcome, RunOutcome::Stopped);
    ASSERT_TRUE(stop_asked);
    EXPECT_FALSE(stepped_after_stop);
    expect_stop_logged_and_resumed_to_the_end(db, stopped.run_id(), "stopped at step " + std::to_string(steps), steps, pa, a);
  }
}

// An epoch that clusters its queries and refreshes its shortlists encodes the queries once: the refresh reads the
// clustering's float32 encodings back from an unnamed file under TMPDIR. Where none can be kept (TMPDIR missing) the
// log says so and the refresh encodes again; both ways train the same model, bit for bit, and leave no file behind.
TEST(Training, AnEpochsQueriesEncodedForItsClusteringServeItsRefreshToTheSameResult) {
  const char* saved = std::getenv("TMPDIR");
  const std::string tmpdir_before = saved != nullptr ? saved : "";
  for (const std::string method : {"unidec", "dexml", "ngame"}) {
    SCOPED_TRACE(method);
    test::TempDir dir;
    const TrainConfig config = refreshed_and_clustered_every_epoch(dir.path(), method);
    std::filesystem::create_directories(dir / "tmp");
    auto run_with_tmpdir = [&](const std::filesystem::path& tmpdir, const std::string& db, int& kept, int& not_kept) {
      ::setenv("TMPDIR", tmpdir.c_str(), 1);
      TrainingRun run(config, dir / db);
      kept = not_kept = 0;
      run.subscribe([&](const TrainEvent& e) {
        if (e.kind != TrainEvent::Kind::Phase) return;
        if (e.message.rfind("training queries' float32 encodings kept for the shortlist refresh (", 0) == 0 &&
            e.message.find(tmpdir.string()) != std::string::npos)
          ++kept;
        if (e.message.rfind("training queries' encodings not kept for the shortlist refresh (", 0) == 0 &&
            e.message.find("the refresh encodes them again") != std::string::npos)
          ++not_kept;
      });
      const TrainResult result = run.run();
      if (tmpdir_before.empty()) ::unsetenv("TMPDIR");
      else ::setenv("TMPDIR", tmpdir_before.c_str(), 1);
      EXPECT_EQ(result.outcome, RunOutcome::Completed);
      return std::make_pair(result, run.run_id());
    };
    int kept = 0, not_kept = 0;
    const auto [again, again_id] = run_with_tmpdir(dir / "missing", "again.sqlite", kept, not_kept);
    EXPECT_EQ(kept, 0);
    EXPECT_EQ(not_kept, 2);  // epochs 2 and 3 cluster (epoch 1 only refreshes)
    const auto [once, once_id] = run_with_tmpdir(dir / "tmp", "once.sqlite", kept, not_kept);
    EXPECT_EQ(kept, 2);
    EXPECT_EQ(not_kept, 0);
    EXPECT_TRUE(std::filesystem::is_empty(dir / "tmp"));
    expect_same_end(final_parameters(dir / "again.sqlite", again_id), again, dir / "once.sqlite", once_id, once);
  }
}

// A stop during the evaluation that follows max_steps says what a resume does: it runs that evaluation again (it
// does not train on), and ends where the uninterrupted run ended.
TEST(Training, AStopDuringTheEvaluationAfterMaxStepsSaysAResumeRunsItAgain) {
  test::TempDir dir;
  TrainConfig config = method_config(dir.path(), "dexml", "inbatch", 3, 0);
  config.max_steps = 5;
  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();
  ASSERT_EQ(a.outcome, RunOutcome::Stopped);
  ASSERT_FALSE(a.metrics.metrics.empty());
  const auto pa = final_parameters(dir / "a.sqlite", whole.run_id());

  const auto db = dir / "stopped.sqlite";
  TrainingRun stopped(config, db);
  stopped.subscribe([&](const TrainEvent& e) {
    if (e.kind == TrainEvent::Kind::Phase && e.message == "evaluating") stopped.request_stop();
  });
  ASSERT_EQ(stopped.run().outcome, RunOutcome::Stopped);
  {
    const RunStore store(db);
    const auto log = store.log(stopped.run_id());
    ASSERT_FALSE(log.empty());
    EXPECT_NE(log.back().message.find("stopped during the evaluation at step 5 (checkpoint written; a resume runs the final evaluation)"), std::string::npos)
        << log.back().message;
    EXPECT_TRUE(store.evaluations(stopped.run_id()).empty());
  }
  std::int64_t first_step_after_resume = -1;
  const TrainResult b = resume_to_the_end(db, stopped.run_id(), first_step_after_resume);
  EXPECT_EQ(b.outcome, RunOutcome::Stopped);  // max_steps again
  EXPECT_EQ(first_step_after_resume, -1);
  expect_same_end(pa, a, db, stopped.run_id(), b);
}

// A stop asked for while an evaluation runs (Ctrl-C, the workbench's Stop) ends the evaluation instead of waiting
// for it (20 minutes at 970k test queries): the evaluation is not recorded, the state set aside for it comes back
// into the checkpoint, and a resume trains on, or runs the final evaluation again, to the uninterrupted run's result.
TEST(Training, AStopDuringAnEvaluationEndsItAndResumesToTheUninterruptedResult) {
  test::TempDir dir;
  TrainConfig config = method_config(dir.path(), "unidec", "hard", 3, 1);
  config.eval_set_aside_mb = 0;  // the shortlists and moments are away while it evaluates
  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();
  ASSERT_EQ(a.outcome, RunOutcome::Completed);
  const auto pa = final_parameters(dir / "a.sqlite", whole.run_id());
  ASSERT_FALSE(pa.empty());
  std::set<double> evaluated_epochs;
  for (const EvalPoint& point : RunStore(dir / "a.sqlite").evaluations(whole.run_id())) evaluated_epochs.insert(point.epoch);
  ASSERT_EQ(evaluated_epochs, (std::set<double>{1, 2, 3}));

  // Stopped at the n-th evaluation's start (1: after epoch 1; 3: the final one), then resumed.
  for (const int stop_at : {1, 3}) {
    SCOPED_TRACE("stopped in evaluation " + std::to_string(stop_at));
    const auto db = dir / ("stop" + std::to_string(stop_at) + ".sqlite");
    TrainingRun stopped(config, db);
    int evaluations = 0;
    std::int64_t steps_before_stop = 0;
    stopped.subscribe([&](const TrainEvent& e) {
      if (e.kind == TrainEvent::Kind::Step) steps_before_stop = e.step;
      if (e.kind == TrainEvent::Kind::Phase && e.message == "evaluating" && ++evaluations == stop_at) stopped.request_stop();
    });
    ASSERT_EQ(stopped.run().outcome, RunOutcome::Stopped);
    const auto run_dir = TrainingRun::run_directory(db, stopped.run_id());
    EXPECT_FALSE(std::filesystem::exists(run_dir / "evaluation-set-aside.bin"));
    {
      const RunStore store(db);
      const auto log = store.log(stopped.run_id());
      ASSERT_FALSE(log.empty());
      EXPECT_NE(log.back().message.find("stopped during the evaluation at step " + std::to_string(steps_before_stop)), std::string::npos) << log.back().message;
      EXPECT_NE(log.back().message.find(stop_at == 3 ? "a resume runs the final evaluation" : "a resume goes on training without that evaluation"),
                std::string::npos)
          << log.back().message;
      std::set<double> recorded;  // the stopped evaluation left no point
      for (const EvalPoint& point : store.evaluations(stopped.run_id())) recorded.insert(point.epoch);
      EXPECT_EQ(recorded, stop_at == 3 ? (std::set<double>{1, 2}) : (std::set<double>{}));
    }
    std::int64_t first_step_after_resume = -1;
    const TrainResult b = resume_to_the_end(db, stopped.run_id(), first_step_after_resume);
    ASSERT_EQ(b.outcome, RunOutcome::Completed);
    // Epoch 1 is not trained again after a stop in the evaluation that followed it; nothing is after the last.
    EXPECT_EQ(first_step_after_resume, stop_at == 3 ? -1 : steps_before_stop + 1);
    ASSERT_FALSE(a.metrics.metrics.empty());
    expect_same_end(pa, a, db, stopped.run_id(), b);
    std::set<double> recorded;
    for (const EvalPoint& point : RunStore(db).evaluations(stopped.run_id())) recorded.insert(point.epoch);
    EXPECT_EQ(recorded, stop_at == 1 ? (std::set<double>{2, 3}) : (std::set<double>{1, 2, 3}));
  }
}

// A run whose checkpoint file was deleted is not silently trained again from step 0: the resume is refused,
// naming the file and --restart; with restart it trains from step 0, once, to the uninterrupted run's numbers.
TEST(Training, ALostCheckpointIsRefusedUnlessTheRunIsRestarted) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 2);
  TrainConfig config = small_config(dir / "data");
  config.epochs = 2;
  config.eval_every = 0;
  const auto db = dir / "runs.sqlite";
  const TrainResult whole = TrainingRun(config, dir / "whole.sqlite").run();
  config.max_steps = 5;
  TrainingRun first(config, db);
  ASSERT_EQ(first.run().outcome, RunOutcome::Stopped);
  const auto checkpoint = TrainingRun::run_directory(db, first.run_id()) / "checkpoint.pt";
  ASSERT_TRUE(std::filesystem::remove(checkpoint));
  try {
    TrainingRun::resume(first.run_id(), db, {"max_steps=0"});
    FAIL() << "a run that lost its checkpoint was resumed";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(checkpoint.string() + " is gone"), std::string::npos) << message;
    EXPECT_NE(message.find("--restart"), std::string::npos) << message;
  }
  EXPECT_EQ(RunStore(db).get_run(first.run_id()).status, RunStatus::Stopped) << "the refusal changes nothing";
  TrainingRun again = TrainingRun::resume(first.run_id(), db, {"max_steps=0"}, {}, /*restart=*/true);
  const TrainResult restarted = again.run();
  ASSERT_EQ(restarted.outcome, RunOutcome::Completed);
  for (const auto& [name, value] : whole.metrics.metrics) EXPECT_EQ(value, restarted.metrics.get(name)) << name;
  // Every step recorded once: the stopped attempt's steps were dropped with it.
  const auto losses = RunStore(db).scalars(first.run_id(), "loss");
  std::set<std::int64_t> steps;
  for (const auto& point : losses) steps.insert(point.step);
  EXPECT_EQ(steps.size(), losses.size());
  EXPECT_EQ(static_cast<std::int64_t>(losses.size()), RunStore(dir / "whole.sqlite").scalars(1, "loss").size());
}

TEST(Training, ACheckpointWrittenWhileTheNextBatchIsPreparedResumesBitForBit) {
  // With prefetch=on a checkpoint inside an epoch is written while the next batch is being prepared (it has
  // drawn its positives from the label-pool stream); the checkpoint must keep the stream from before it, and
  // the run goes on with the batch it prepared.
  // DEXML prepares its label pool ahead; UniDEC its PSL pool, its hard negatives drawn from the shortlist window
  // (or, with every label as a negative, the pool alone: the labels' inputs are built in the step).
  for (const auto& [method, negatives] : std::vector<std::pair<std::string, std::string>>{{"dexml", "inbatch"}, {"unidec", "hard"}, {"unidec", "all"}}) {
    SCOPED_TRACE(method + " " + negatives);
    test::TempDir dir;
    TrainConfig config = method_config(dir.path(), method, negatives, 2, 0);
    if (method == "unidec") config.edit<PslOptions>().positives = 1;  // one positive of several drawn: the draws show in the run
    TrainingRun whole(config, dir / "a.sqlite");
    const TrainResult a = whole.run();

    config.prefetch = "on";
    config.checkpoint_every_steps = 5;
    TrainingRun first(config, dir / "b.sqlite");
    const auto checkpoint = TrainingRun::run_directory(dir / "b.sqlite", first.run_id()) / "checkpoint.pt";
    const auto kept = dir / "after_step_5.pt";
    first.subscribe([&](const TrainEvent& e) {
      if (e.kind != TrainEvent::Kind::Step) return;
      if (e.step == 6) std::filesystem::copy_file(checkpoint, kept);  // the checkpoint taken before step 6
      if (e.step == 8) first.request_stop();
    });
    ASSERT_EQ(first.run().outcome, RunOutcome::Stopped);
    ASSERT_TRUE(std::filesystem::exists(kept));
    // As if the process had been killed after step 7: only the checkpoint of step 5 is left.
    std::filesystem::copy_file(kept, checkpoint, std::filesystem::copy_options::overwrite_existing);
    TrainingRun resumed = TrainingRun::resume(first.run_id(), dir / "b.sqlite");
    const TrainResult b = resumed.run();
    ASSERT_EQ(b.outcome, RunOutcome::Completed);
    const auto pa = checkpoint_parameters(TrainingRun::run_directory(dir / "a.sqlite", whole.run_id()) / "checkpoint.pt");
    const auto pb = checkpoint_parameters(checkpoint);
    ASSERT_EQ(pa.size(), pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
    for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, b.metrics.get(name)) << name;

    // A run that is not stopped trains the batch it prepared before each checkpoint: the same run again.
    TrainingRun through(config, dir / "c.sqlite");
    const TrainResult c = through.run();
    ASSERT_EQ(c.outcome, RunOutcome::Completed);
    const auto pc = checkpoint_parameters(TrainingRun::run_directory(dir / "c.sqlite", through.run_id()) / "checkpoint.pt");
    for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pc[i])) << "parameter " << i << " through checkpoints";
  }
}

TEST(Training, NonFiniteLossFailsTheRunAndLeavesStoredRunsIntact) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 3);
  const auto db = dir / "runs.sqlite";
  TrainConfig config = small_config(dir / "data");
  config.epochs = 1;
  TrainingRun good(config, db);
  good.run();
  const auto good_checkpoint = TrainingRun::run_directory(db, good.run_id()) / "checkpoint.pt";
  const auto good_parameters = checkpoint_parameters(good_checkpoint);

  // A transformer checkpoint with a corrupted (NaN) weight, as a broken fp16 conversion leaves behind:
  // the scores and the loss turn NaN on the first step.
  const auto model_dir = dir / "bert";
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\ntopic\n";
  for (int l = 0; l < 12; ++l) vocab += "kw" + std::to_string(l) + "\n";
  for (int w = 0; w < 40; ++w) vocab += "noise" + std::to_string(w) + "\n";
  std::filesystem::create_directories(model_dir);
  test::write_file(model_dir / "vocab.txt", vocab);
  BertConfig bert;
  bert.vocab_size = 4 + 1 + 12 + 40;
  bert.hidden_size = 16;
  bert.num_layers = 1;
  bert.num_heads = 2;
  bert.intermediate_size = 32;
  bert.max_position_embeddings = 32;
  BertEncoder encoder(bert, BertEncoderOptions{});
  {
    torch::NoGradGuard no_grad;
    encoder->named_parameters()["encoder.layer.0.intermediate.dense.weight"][0][0] = std::nanf("");
  }
  save_bert_encoder(encoder, bert, model_dir);
  config.edit<EncoderOptions>().type = "bert";
  config.edit<EncoderOptions>().path = model_dir;
  config.edit<TransformerOptions>().max_len = 16;
  TrainingRun broken(config, db);
  std::string failure;
  broken.subscribe([&](const TrainEvent& e) {
    if (e.kind == TrainEvent::Kind::Failed) failure = e.message;
  });
  EXPECT_THROW(broken.run(), Error);
  EXPECT_NE(failure.find("the loss is"), std::string::npos) << failure;
  RunStore store(db);
  const RunInfo info = store.get_run(broken.run_id());
  EXPECT_EQ(info.status, RunStatus::Failed);
  EXPECT_EQ(info.last_error, failure);
  // The other run and its checkpoint are untouched.
  EXPECT_EQ(store.get_run(good.run_id()).status, RunStatus::Completed);
  const auto after = checkpoint_parameters(good_checkpoint);
  ASSERT_EQ(after.size(), good_parameters.size());
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(torch::equal(after[i], good_parameters[i]));
}

TEST(Training, NgameTrainsClassifiersAndReportsEveryInferenceMode) {
  test::TempDir dir;
  write_synthetic_dataset(dir / "data", 4);
  TrainConfig config = small_config(dir / "data");
  config.method = "ngame";
  config.edit<LossOptions>().kind = "triplet";
  config.edit<QueryBatcherOptions>().type = "cluster";
  config.edit<ClusterBatchOptions>().cluster_size = 4;
  config.epochs = 3;
  config.edit<NgameOptions>().m4_epochs = 2;
  config.eval_every = 0;
  TrainingRun run(config, dir / "runs.sqlite");
  const TrainResult result = run.run();
  EXPECT_GT(result.metrics.get("P@1"), 0.5);
  std::set<std::string> metrics;
  for (const auto& e : RunStore(dir / "runs.sqlite").evaluations(run.run_id())) metrics.insert(e.metric);
  EXPECT_TRUE(metrics.count("emb/P@1") && metrics.count("clf/P@1") && metrics.count("P@1"));
  // One loss point per step of its stage; learning rate and throughput at every step of both stages.
  const RunStore store(dir / "runs.sqlite");
  const std::size_t m1 = store.scalars(run.run_id(), "loss").size(), m4 = store.scalars(run.run_id(), "m4_loss").size();
  EXPECT_GT(m1, 0u);
  EXPECT_GT(m4, 0u);
  EXPECT_EQ(store.scalars(run.run_id(), "lr").size(), m1 + m4);
  EXPECT_EQ(store.scalars(run.run_id(), "samples_per_s").size(), m1 + m4);
}

TEST(Training, BadConfigNamesTheKey) {
  try {
    parse_train_config(R"({"sampler": {"typo_key": 3}})");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown config key 'sampler.typo_key'"), std::string::npos) << e.what();
  }
  try {
    parse_train_config(R"({"loss": "hinge"})");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("loss: got \"hinge\", expected one of: triplet"), std::string::npos) << e.what();
  }
  // 100,000 nested arrays once crashed the process (recursive destruction of the parsed JSON).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    parse_train_config("{\"eval\": {\"k\": " + deep + "}}", "deep.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("deep.json: not valid JSON: [json.exception.parse_error.101] parse error: values nested deeper than 256 levels"),
              std::string::npos)
        << e.what();
  }
  try {  // a number past double's range ended as "internal error"
    parse_train_config(R"({"lr": 1e400})", "huge.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("huge.json: not valid JSON: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1e400"), std::string::npos) << e.what();
  }
  TrainConfig c;
  EXPECT_THROW(apply_config_overrides(c, {"eval.k=" + deep}), ConfigError);  // taken as text: not a list of k
  EXPECT_THROW(apply_config_overrides(c, {"batch_size=-3"}), ConfigError);
  // Values past what an int holds, or a machine can do, are named errors (they wrapped to 1 or hung before).
  const std::vector<std::pair<std::string, std::string>> refused{
      {"eval.k=[4294967297]", "eval.k: got 4294967297, expected an integer in [1, 100000]"},
      {"threads=4294967297", "threads: got 4294967297, expected an integer in [0, 1024]"},
      {"threads=100000", "threads: got 100000, expected an integer in [0, 1024]"},
      {"seed=18446744073709551615", "seed: got 18446744073709551615, expected an integer >= 0"},
      {"encoder.dim=1000000000", "encoder.dim: got 1000000000, expected an integer in [2, 65536]"},
      {"eval.top=1000000000000", "eval.top: got 1000000000000, expected an integer in [1, 100000]"},
      {"irene.selection_margin=-1", "irene.selection_margin: got -1, expected a number in [0, 10]"},
      {"unidec.concat_holdout=0.6", "unidec.concat_holdout: got 0.6, expected a number in [0, 0.5]"},
      {"eval.set_aside_mb=-1", "eval.set_aside_mb: got -1, expected an integer >= 0"},
      {"eval.set_aside_mb=lots", "eval.set_aside_mb: got \"lots\", expected an integer >= 0"},
      // The config is stored as JSON, which holds UTF-8 only ("internal error" when the run was recorded).
      {"name=run\xff" "1", "name: got \"run?\", expected valid UTF-8 text (byte 255 at offset 3 is not)"},
      // A non-JSON value is taken as text, with whatever bytes it has; naming it ended the process (the JSON
      // writer threw on the byte 0xC5 that starts no UTF-8 sequence here). It is shown with U+FFFD.
      {"epochs=x\xc5y", "epochs: got \"x\xef\xbf\xbdy\", expected an integer in [1, 1000000]"},
  };
  for (const auto& [assignment, message] : refused) {
    try {
      TrainConfig fresh;
      apply_config_overrides(fresh, {assignment});
      ADD_FAILURE() << assignment << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  std::string seventy_zeros = "sampler.grow_at=[0";
  for (int i = 1; i < 70; ++i) seventy_zeros += ",0";
  EXPECT_THROW(apply_config_overrides(c, {seventy_zeros + "]"}), ConfigError);
  apply_config_overrides(c, {"method=ngame", "sampler.grow_at=[2,4]", "lr=0.5"});
  EXPECT_EQ(c.method, "ngame");
  EXPECT_EQ(c.get<ClusterBatchOptions>().grow_at, (std::vector<std::int64_t>{2, 4}));
  EXPECT_DOUBLE_EQ(c.lr, 0.5);
}

TEST(Training, KeyGroupsAndConditionsNameRealKeysAndChoices) {
  std::map<std::string, const ConfigKeyInfo*> by_key;
  for (const auto& info : train_config_keys()) by_key[info.key] = &info;
  for (const auto& info : train_config_keys()) {
    EXPECT_FALSE(info.group.empty()) << info.key;
    if (info.applies_when.empty()) continue;
    // "key=a|b;key2=c": each key is a string key with a fixed set of choices that holds the values named.
    const auto conditions = key_conditions(info);
    ASSERT_FALSE(conditions.empty()) << info.key;
    for (const KeyCondition& condition : conditions) {
      const auto it = by_key.find(condition.key);
      ASSERT_NE(it, by_key.end()) << info.key << ": " << info.applies_when;
      ASSERT_FALSE(condition.values.empty()) << info.key << ": " << info.applies_when;
      for (const std::string& value : condition.values)
        EXPECT_NE(std::find(it->second->choices.begin(), it->second->choices.end(), value), it->second->choices.end())
            << info.key << ": " << value;
    }
  }
}

TEST(Training, KeysApplyOnlyToTheChosenComponents) {
  auto applies = [](const std::string& key, const TrainConfig& c) {
    for (const auto& info : train_config_keys())
      if (info.key == key) return key_applies(info, c);
    ADD_FAILURE() << "no key " << key;
    return false;
  };
  TrainConfig c;  // dexml, bow, random batches, in-batch negatives, decoupled softmax
  for (const char* key : {"lr", "temperature", "encoder.min_count", "encoder.dim"}) EXPECT_TRUE(applies(key, c)) << key;
  for (const char* key : {"margin", "encoder.pooling", "sampler.cluster_size", "hard.per_query", "all.label_chunk", "ngame.fusion"})
    EXPECT_FALSE(applies(key, c)) << key;
  apply_config_overrides(c, {"method=ngame", "encoder.type=bert", "sampler.type=cluster", "negatives=hard", "loss=triplet"});
  for (const char* key : {"margin", "hardest_k", "encoder.pooling", "encoder.max_len", "sampler.cluster_size", "hard.per_query", "ngame.fusion"})
    EXPECT_TRUE(applies(key, c)) << key;
  for (const char* key : {"temperature", "topk_k", "encoder.min_count", "all.label_chunk", "psl.positives"}) EXPECT_FALSE(applies(key, c)) << key;
  // Both conditions of a key must hold: UniDEC's hard negatives are its own keys, not the dual encoder's.
  apply_config_overrides(c, {"method=unidec"});
  for (const char* key : {"psl.positives", "psl.hard_negatives", "psl.refresh_every", "unidec.lambda", "unidec.classifier_lr"})
    EXPECT_TRUE(applies(key, c)) << key;
  for (const char* key : {"hard.per_query", "hard.refresh_every", "ngame.fusion"}) EXPECT_FALSE(applies(key, c)) << key;
  apply_config_overrides(c, {"method=depsl", "negatives=inbatch"});
  EXPECT_TRUE(applies("psl.positives", c));
  for (const char* key : {"psl.hard_negatives", "unidec.lambda", "hard.per_query"}) EXPECT_FALSE(applies(key, c)) << key;
  // IRENE takes its encoder, tokenizer and batches from its base run: it trains its generator by lr, epochs and
  // batches, and nothing of an encoder, a loss, negatives, a sampler, several processes or a t-SNE of negatives.
  apply_config_overrides(c, {"method=irene"});
  for (const char* key : {"lr", "epochs", "batch_size", "seed", "eval.k", "irene.heads", "irene.base_run"}) EXPECT_TRUE(applies(key, c)) << key;
  for (const char* key : {"encoder.dim", "encoder.min_count", "encoder.bag", "loss", "temperature", "negatives", "sampler.type", "distributed.backend",
                          "tsne.every"})
    EXPECT_FALSE(applies(key, c)) << key;
}

}  // namespace xmc
