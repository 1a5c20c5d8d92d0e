// The decoder encoder against an independent transcription of Hugging Face's Qwen2 / Qwen3 / Llama forward
// (tests/reference/make_decoder_fixtures.py, Debian's python3-torch; its outputs are committed in
// tests/fixtures/decoder), and LoRA, masking, pooling, checkpointing and loading worked out by hand.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/model/decoder/decoder_config.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/model/decoder/lora_linear.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_decoder_config.h"

namespace xmc {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(XMC_TEST_FIXTURES) / "decoder";

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

TokenizedCorpus corpus_of(const std::vector<std::vector<std::int32_t>>& rows) {
  TokenizedCorpus corpus;
  for (const auto& row : rows) corpus.append(row);
  return corpus;
}

std::vector<std::int64_t> all_rows(const TokenizedCorpus& corpus) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(corpus.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  return rows;
}

torch::Tensor expected_rows(const nlohmann::json& values) {
  std::vector<torch::Tensor> rows;
  for (const auto& row : values) rows.push_back(torch::tensor(row.get<std::vector<float>>()));
  return torch::stack(rows);
}

/// Largest relative error of a row: ||a − b|| / ||b||.
double worst_relative_error(const torch::Tensor& actual, const torch::Tensor& expected) {
  return ((actual - expected).norm(2, 1) / expected.norm(2, 1)).max().item<double>();
}

/// A model with every weight drawn at a visible scale (the HF default of 0.02 makes every output nearly alike).
DecoderEncoder random_model(const DecoderConfig& config, std::uint64_t seed, DecoderEncoderOptions options = {}) {
  torch::manual_seed(seed);
  DecoderEncoder model(config, options);
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : model->base_weights()) {
    if (name.find("norm") != std::string::npos) tensor->copy_(1.0 + 0.1 * torch::randn(tensor->sizes()));
    else tensor->copy_(0.3 * torch::randn(tensor->sizes()));
  }
  model->eval();
  return model;
}

}  // namespace

TEST(DecoderEncoder, PooledOutputsMatchTheReferenceForwardOfEachArchitecture) {
  for (const std::string case_name : {"qwen2", "qwen3_sharded", "llama_bf16"}) {
    SCOPED_TRACE(case_name);
    const auto folder = kFixtures / case_name;
    const nlohmann::json expected = read_json(folder / "expected.json");
    const TokenizedCorpus corpus = corpus_of(expected["rows"].get<std::vector<std::vector<std::int32_t>>>());
    const auto rows = all_rows(corpus);
    for (const DecoderPooling pooling : {DecoderPooling::mean, DecoderPooling::last}) {
      DecoderEncoderOptions options;
      options.pooling = pooling;
      options.max_len = 64;
      DecoderEncoder model = load_decoder_encoder(folder, options);
      model->eval();
      torch::NoGradGuard no_grad;
      // All rows in one right-padded batch: padding must change nothing.
      const torch::Tensor pooled = model->encode(corpus, rows);
      const torch::Tensor reference = expected_rows(expected[pooling == DecoderPooling::mean ? "mean" : "last"]);
      ASSERT_EQ(pooled.sizes(), reference.sizes());
      EXPECT_LT(worst_relative_error(pooled, reference), 1e-4);

      // bf16: products under autocast, and frozen weights held in bf16 beside adapters.
      DecoderEncoderOptions mixed = options;
      mixed.autocast = torch::kBFloat16;
      DecoderEncoder autocast = load_decoder_encoder(folder, mixed);
      autocast->eval();
      EXPECT_LT(worst_relative_error(autocast->encode(corpus, rows), reference), 2e-2);
      DecoderEncoderOptions held_bf16 = options;
      held_bf16.lora.spec.rank = 4;
      held_bf16.lora.targets = {"q", "v"};
      held_bf16.lora.base_dtype = torch::kBFloat16;
      DecoderEncoder frozen = load_decoder_encoder(folder, held_bf16);
      frozen->eval();
      EXPECT_LT(worst_relative_error(frozen->encode(corpus, rows), reference), 2e-2);
    }
  }
}

TEST(DecoderEncoder, AFreshAdapterLeavesTheBaseModelAndOnlyAdaptersTrain) {
  const auto folder = kFixtures / "qwen2";
  const nlohmann::json expected = read_json(folder / "expected.json");
  const TokenizedCorpus corpus = corpus_of(expected["rows"].get<std::vector<std::vector<std::int32_t>>>());
  DecoderEncoderOptions options;
  options.lora.spec = {.rank = 8, .alpha = 16, .rslora = true, .dropout = 0.0};
  options.lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  DecoderEncoder model = load_decoder_encoder(folder, options);
  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_LT(worst_relative_error(model->encode(corpus, all_rows(corpus)), expected_rows(expected["mean"])), 1e-4);
  // Parameters are the adapters alone: 2 layers × 7 projections × (A, B).
  const auto names = model->named_parameters().keys();
  EXPECT_EQ(names.size(), 28u);
  for (const auto& name : names) EXPECT_NE(name.find("lora_"), std::string::npos) << name;
  EXPECT_EQ(model->named_parameters()["layers.0.self_attn.q_proj.lora_A"].sizes(), (std::vector<std::int64_t>{8, 32}));
  EXPECT_EQ(model->named_parameters()["layers.1.mlp.down_proj.lora_B"].sizes(), (std::vector<std::int64_t>{32, 8}));
}

TEST(LoraLinear, ScalesTheAdapterByAlphaOverRootRankOrOverRank) {
  // W = [[1, 2]], b = [0.5], x = [1, 3]: base = 1 + 6 + 0.5 = 7.5. A (r = 4) rows all [1, 0], B = [[1, 1, 1, 1]]:
  // B·A·x = 4 · 1 = 4. α = 8: rsLoRA s = 8/√4 = 4 -> 7.5 + 16 = 23.5; plain s = 8/4 = 2 -> 7.5 + 8 = 15.5.
  for (const bool rslora : {true, false}) {
    LoraLinear linear(2, 1, true, LoraSpec{.rank = 4, .alpha = 8, .rslora = rslora, .dropout = 0.0}, false, 0.02, torch::kCPU);
    linear->eval();
    torch::NoGradGuard no_grad;
    linear->weight().copy_(torch::tensor({{1.0f, 2.0f}}));
    linear->bias().copy_(torch::tensor({0.5f}));
    EXPECT_FLOAT_EQ(linear->forward(torch::tensor({{1.0f, 3.0f}})).item<float>(), 7.5f);  // B starts at zero
    linear->lora_a().copy_(torch::tensor({{1.0f, 0.0f}, {1.0f, 0.0f}, {1.0f, 0.0f}, {1.0f, 0.0f}}));
    linear->lora_b().fill_(1.0f);
    EXPECT_FLOAT_EQ(linear->forward(torch::tensor({{1.0f, 3.0f}})).item<float>(), rslora ? 23.5f : 15.5f);
    // The merged weight gives the same product: W + s·BA = [[1 + 4s, 2]].
    const float s = rslora ? 4.0f : 2.0f;
    EXPECT_TRUE(torch::allclose(linear->merged_weight(), torch::tensor({{1.0f + 4 * s, 2.0f}})));
    EXPECT_EQ(linear->parameters().size(), 2u);  // A and B: W and b are frozen
  }
}

TEST(DecoderEncoder, ALaterTokenNeverChangesAnEarlierOne) {
  DecoderEncoder model = random_model(test::tiny_decoder_config(), 3);
  torch::NoGradGuard no_grad;
  const torch::Tensor short_ids = torch::tensor({{5, 9, 13, 49}}, torch::kLong);
  const torch::Tensor long_ids = torch::tensor({{5, 9, 13, 49, 7, 7, 21}}, torch::kLong);
  const torch::Tensor a = model->forward(short_ids, torch::ones({1, 4}, torch::kBool));
  const torch::Tensor b = model->forward(long_ids, torch::ones({1, 7}, torch::kBool));
  EXPECT_TRUE(torch::allclose(a, b.narrow(1, 0, 4), 1e-5, 1e-5));
  // ...while an earlier token does change a later one.
  const torch::Tensor c = model->forward(torch::tensor({{6, 9, 13, 49}}, torch::kLong), torch::ones({1, 4}, torch::kBool));
  EXPECT_GT((c.select(1, 3) - a.select(1, 3)).abs().max().item<double>(), 1e-3);
}

TEST(DecoderEncoder, PoolingIgnoresPaddingAndLastIsTheEos) {
  DecoderEncoder model = random_model(test::tiny_decoder_config(), 4);
  torch::NoGradGuard no_grad;
  const TokenizedCorpus corpus = corpus_of({{5, 49}, {3, 4, 5, 6, 7, 8, 9, 49}, {11, 12, 49}});
  for (const DecoderPooling pooling : {DecoderPooling::mean, DecoderPooling::last}) {
    DecoderEncoderOptions options;
    options.pooling = pooling;
    DecoderEncoder pooled_model = random_model(test::tiny_decoder_config(), 4, options);
    const torch::Tensor together = pooled_model->encode(corpus, std::vector<std::int64_t>{0, 1, 2});
    for (std::int64_t r = 0; r < 3; ++r) {
      const torch::Tensor alone = pooled_model->encode(corpus, std::vector<std::int64_t>{r});
      EXPECT_TRUE(torch::allclose(together[r], alone[0], 1e-5, 1e-5)) << "row " << r;
    }
    // By hand from the hidden states of row 0 alone: mean of its 2 positions, or its position 1 (the EOS).
    const torch::Tensor hidden = pooled_model->forward(torch::tensor({{5, 49}}, torch::kLong), torch::ones({1, 2}, torch::kBool))[0];
    const torch::Tensor expected = pooling == DecoderPooling::mean ? (hidden[0] + hidden[1]) / 2 : hidden[1];
    EXPECT_TRUE(torch::allclose(together[0], expected, 1e-5, 1e-5));
  }
  // A text longer than max_len keeps its first max_len − 1 tokens and its EOS.
  DecoderEncoderOptions short_options;
  short_options.max_len = 3;
  DecoderEncoder truncating = random_model(test::tiny_decoder_config(), 4, short_options);
  const DecoderBatch batch = truncating->make_batch(corpus, std::vector<std::int64_t>{1});
  EXPECT_TRUE(torch::equal(batch.input_ids, torch::tensor({{3, 4, 49}}, torch::kLong)));
}

TEST(DecoderEncoder, CheckpointedLayersGiveTheSameGradients) {
  const TokenizedCorpus corpus = corpus_of({{5, 9, 49}, {3, 4, 5, 6, 49}, {11, 49}});
  const std::vector<std::int64_t> rows{0, 1, 2};
  for (const std::int64_t rank : {0, 4}) {
    SCOPED_TRACE("LoRA rank " + std::to_string(rank));
    std::vector<std::vector<torch::Tensor>> grads;
    for (const bool checkpointing : {false, true}) {
      DecoderEncoderOptions options;
      options.checkpointing = checkpointing;
      options.lora.spec = {.rank = rank, .alpha = 8, .rslora = true, .dropout = 0.0};
      options.lora.targets = {"q", "o", "up"};
      DecoderEncoder model = random_model(test::tiny_decoder_config(), 5, options);
      model->train();
      {
        torch::NoGradGuard no_grad;  // adapters away from their zero start, so every gradient is non-trivial
        at::Generator generator = at::detail::createCPUGenerator(7);
        for (auto& p : model->parameters())
          if (rank > 0) p.copy_(0.1 * torch::randn(p.sizes(), generator));
      }
      const torch::Tensor pooled = model->encode(corpus, rows);
      (pooled * torch::linspace(-1, 1, pooled.numel()).view(pooled.sizes())).sum().backward();
      std::vector<torch::Tensor> g;
      for (const auto& p : model->parameters()) {
        ASSERT_TRUE(p.grad().defined());
        g.push_back(p.grad().clone());
      }
      grads.push_back(std::move(g));
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    ASSERT_FALSE(grads[0].empty());
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-6)) << "parameter " << i;
      EXPECT_GT(grads[0][i].abs().max().item<double>(), 0.0) << "parameter " << i;
    }
  }
}

TEST(DecoderEncoder, AnExportedModelWithMergedAdaptersEqualsTheAdaptersApplied) {
  test::TempDir dir;
  const TokenizedCorpus corpus = corpus_of({{5, 9, 49}, {3, 4, 5, 6, 49}});
  DecoderEncoderOptions options;
  options.lora.spec = {.rank = 4, .alpha = 8, .rslora = true, .dropout = 0.0};
  options.lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  DecoderEncoder adapted = random_model(test::tiny_decoder_config(), 6, options);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : adapted->parameters()) p.copy_(0.2 * torch::randn(p.sizes()));
  }
  save_decoder_model(*adapted, dir / "merged");
  DecoderEncoder merged = load_decoder_encoder(dir / "merged");
  merged->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor a = adapted->encode(corpus, std::vector<std::int64_t>{0, 1});
  const torch::Tensor b = merged->encode(corpus, std::vector<std::int64_t>{0, 1});
  EXPECT_LT(worst_relative_error(b, a), 1e-5);
  // The adapters did change the model: the exported one is not the base.
  DecoderEncoder base = random_model(test::tiny_decoder_config(), 6);
  EXPECT_GT(worst_relative_error(base->encode(corpus, std::vector<std::int64_t>{0, 1}), a), 1e-2);
  // The written config reads back as the model's.
  const DecoderConfig config = read_decoder_config(dir / "merged" / "config.json");
  EXPECT_EQ(config.num_kv_heads, 2);
  EXPECT_EQ(config.head_dim, 4);
  EXPECT_EQ(config.eos_token_id, 49);
}

TEST(DecoderEncoder, LoadingNamesTheMissingShardTensorAndShape) {
  test::TempDir dir;
  const auto copy = dir / "model";
  std::filesystem::copy(kFixtures / "qwen3_sharded", copy);
  std::filesystem::remove(copy / "model-00002-of-00002.safetensors");
  try {
    load_decoder_encoder(copy);
    FAIL() << "a missing shard was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors"), std::string::npos) << e.what();
  }
  // A config whose sizes the weights do not have: the tensor and both shapes are named.
  const auto other = dir / "other";
  std::filesystem::copy(kFixtures / "qwen2", other);
  nlohmann::json config = read_json(other / "config.json");
  config["intermediate_size"] = 50;
  std::ofstream(other / "config.json") << config.dump();
  try {
    load_decoder_encoder(other);
    FAIL() << "a shape mismatch was accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("gate_proj.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("[48, 32]"), std::string::npos) << message;
    EXPECT_NE(message.find("[50, 32]"), std::string::npos) << message;
  }
}

TEST(DecoderConfig, RefusesWhatItCannotHonourByKey) {
  const std::string base = R"({"model_type": "qwen2", "vocab_size": 100, "hidden_size": 16, "intermediate_size": 32,
                               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2)";
  auto refusal = [&](const std::string& extra) -> std::string {
    try {
      parse_decoder_config(base + extra + "}", "cfg.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal(""), "");
  EXPECT_NE(refusal(R"(, "use_sliding_window": true)").find("use_sliding_window"), std::string::npos);
  EXPECT_NE(refusal(R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4})").find("rope_scaling"), std::string::npos);
  EXPECT_NE(refusal(R"(, "hidden_act": "gelu")").find("hidden_act"), std::string::npos);
  EXPECT_NE(refusal(R"(, "eos_token_id": 100)").find("eos_token_id"), std::string::npos);
  EXPECT_NE(refusal(R"(, "num_key_value_heads": 3)").find("num_key_value_heads 3"), std::string::npos);
  EXPECT_NE(refusal(R"(, "hidden_size": 1000000)").find("hidden_size 1000000"), std::string::npos);
  try {
    parse_decoder_config(R"({"model_type": "gpt_neox", "vocab_size": 10})", "cfg.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'gpt_neox'"), std::string::npos) << e.what();
  }
  // A list of EOS ids (Llama 3) gives the first; Qwen2's biases and Qwen3's q/k norms come from the model type.
  const DecoderConfig listed = parse_decoder_config(base + R"(, "eos_token_id": [7, 8]})", "cfg.json");
  EXPECT_EQ(listed.eos_token_id, 7);
  EXPECT_TRUE(listed.qkv_bias);
  EXPECT_FALSE(listed.qk_norm);
}

}  // namespace xmc
