#include "engine/model/bert/bert_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/safetensors_file.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

constexpr std::int32_t kCls = 2;
constexpr std::int32_t kSep = 3;

BertConfig tiny_config(BertFamily family = BertFamily::bert) {
  BertConfig config;
  config.family = family;
  config.vocab_size = 50;
  config.hidden_size = 32;
  config.num_layers = 2;
  config.num_heads = 4;
  config.intermediate_size = 64;
  config.max_position_embeddings = 64;
  config.type_vocab_size = family == BertFamily::bert ? 2 : 0;
  return config;
}

/// Texts of the given lengths ([CLS] ... [SEP]) with pseudo-random word ids in [5, 50).
TokenizedCorpus make_corpus(const std::vector<int>& lengths, std::uint32_t seed = 7) {
  TokenizedCorpus corpus;
  std::uint32_t state = seed;
  for (const int length : lengths) {
    std::vector<std::int32_t> tokens{kCls};
    for (int i = 0; i < length - 2; ++i) {
      state = state * 1664525u + 1013904223u;
      tokens.push_back(static_cast<std::int32_t>(5 + (state >> 8) % 45));
    }
    tokens.push_back(kSep);
    corpus.append(tokens);
  }
  return corpus;
}

std::vector<std::int64_t> all_rows(const TokenizedCorpus& corpus) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(corpus.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  return rows;
}

BertEncoder random_encoder(const BertConfig& config, std::uint64_t seed, BertEncoderOptions options = {}) {
  torch::manual_seed(seed);
  BertEncoder encoder(config, options);
  encoder->eval();
  return encoder;
}

torch::Tensor encode_all(BertEncoder& encoder, const TokenizedCorpus& corpus) {
  torch::NoGradGuard no_grad;
  const auto rows = all_rows(corpus);
  return encoder->encode(corpus, rows);
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

/// Writes `folder`/model.safetensors from (name, tensor) pairs in `dtype` and `folder`/config.json.
void write_checkpoint(const std::filesystem::path& folder, const std::string& config_json,
                      const std::vector<std::pair<std::string, torch::Tensor>>& named, SafeDtype dtype = SafeDtype::F32) {
  std::filesystem::create_directories(folder);
  const torch::ScalarType type = dtype == SafeDtype::F16    ? torch::kHalf
                                 : dtype == SafeDtype::BF16 ? torch::kBFloat16
                                 : dtype == SafeDtype::I64  ? torch::kLong
                                                            : torch::kFloat;
  std::vector<torch::Tensor> keep;
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, tensor] : named) {
    keep.push_back(tensor.detach().to(type).contiguous());
    const torch::Tensor& t = keep.back();
    tensors.push_back({name, dtype, std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end()),
                       {static_cast<const std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.nbytes())}});
  }
  write_safetensors(folder / "model.safetensors", tensors);
  test::write_file(folder / "config.json", config_json);
}

std::vector<std::pair<std::string, torch::Tensor>> parameters_of(BertEncoder& encoder) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : encoder->named_parameters()) named.emplace_back(item.key(), item.value());
  return named;
}

// ---------------------------------------------------------------------------------------------------------

TEST(BertConfig, ParsesBertMiniLmAndDistilBertConfigs) {
  const BertConfig minilm = parse_bert_config(R"({
    "architectures": ["BertModel"], "model_type": "bert", "vocab_size": 30522, "hidden_size": 384,
    "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
    "max_position_embeddings": 512, "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "pad_token_id": 0,
    "gradient_checkpointing": false, "transformers_version": "4.8.2"})",
                                              "minilm/config.json");
  EXPECT_EQ(minilm.family, BertFamily::bert);
  EXPECT_EQ(minilm.hidden_size, 384);
  EXPECT_EQ(minilm.num_layers, 6);
  EXPECT_EQ(minilm.head_dim(), 32);
  EXPECT_EQ(minilm.activation, BertActivation::gelu);

  const BertConfig distil = parse_bert_config(R"({
    "model_type": "distilbert", "vocab_size": 30522, "dim": 768, "n_layers": 6, "n_heads": 12,
    "hidden_dim": 3072, "max_position_embeddings": 512, "activation": "gelu", "dropout": 0.2,
    "attention_dropout": 0.05, "sinusoidal_pos_embds": false})",
                                              "distil/config.json");
  EXPECT_EQ(distil.family, BertFamily::distilbert);
  EXPECT_EQ(distil.hidden_size, 768);
  EXPECT_EQ(distil.intermediate_size, 3072);
  EXPECT_EQ(distil.type_vocab_size, 0);
  EXPECT_DOUBLE_EQ(distil.hidden_dropout, 0.2);
  EXPECT_DOUBLE_EQ(distil.attention_dropout, 0.05);

  const BertConfig tanh = parse_bert_config(
      R"({"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 16, "max_position_embeddings": 32, "hidden_act": "gelu_new"})",
      "old/config.json");
  EXPECT_EQ(tanh.family, BertFamily::bert) << "model_type inferred from the keys";
  EXPECT_EQ(tanh.activation, BertActivation::gelu_tanh);

  for (const BertConfig& config : {minilm, distil, tanh}) {
    const BertConfig again = parse_bert_config(bert_config_to_json(config), "round trip");
    EXPECT_EQ(again.family, config.family);
    EXPECT_EQ(again.hidden_size, config.hidden_size);
    EXPECT_EQ(again.num_layers, config.num_layers);
    EXPECT_EQ(again.intermediate_size, config.intermediate_size);
    EXPECT_EQ(again.activation, config.activation);
    EXPECT_DOUBLE_EQ(again.hidden_dropout, config.hidden_dropout);
  }
}

TEST(BertConfig, RejectsMissingAndInvalidKeysNamingFileAndKey) {
  const std::string base = R"("vocab_size": 10, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "intermediate_size": 16, "max_position_embeddings": 32)";
  const std::string missing = error_of([&] { parse_bert_config("{" + base + "}", "m/config.json"); });
  EXPECT_NE(missing.find("m/config.json"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'hidden_size'"), std::string::npos) << missing;

  const std::string wrong_type =
      error_of([&] { parse_bert_config("{" + base + R"(, "hidden_size": "eight"})", "t/config.json"); });
  EXPECT_NE(wrong_type.find("t/config.json"), std::string::npos) << wrong_type;
  EXPECT_NE(wrong_type.find("'hidden_size'"), std::string::npos) << wrong_type;

  const std::string heads = error_of([&] { parse_bert_config("{" + base + R"(, "hidden_size": 9})", "h/config.json"); });
  EXPECT_NE(heads.find("num_attention_heads"), std::string::npos) << heads;

  const std::string act = error_of(
      [&] { parse_bert_config("{" + base + R"(, "hidden_size": 8, "hidden_act": "swish"})", "a/config.json"); });
  EXPECT_NE(act.find("'hidden_act'"), std::string::npos) << act;
  EXPECT_NE(act.find("swish"), std::string::npos) << act;

  const std::string type = error_of(
      [&] { parse_bert_config("{" + base + R"(, "hidden_size": 8, "model_type": "roberta"})", "r/config.json"); });
  EXPECT_NE(type.find("roberta"), std::string::npos) << type;

  const std::string distil = error_of([&] {
    parse_bert_config(R"({"model_type": "distilbert", "vocab_size": 10, "dim": 8, "n_layers": 1, "n_heads": 2,
                          "max_position_embeddings": 32})",
                      "d/config.json");
  });
  EXPECT_NE(distil.find("'hidden_dim'"), std::string::npos) << distil;

  EXPECT_THROW(parse_bert_config("{" + base + R"(, "hidden_size": 8)", "j/config.json"), InputError);

  // Sizes no machine holds are refused before anything is allocated, naming the keys: hidden_size 2^24 with 12
  // layers is 12 · 4 · 2^48 ≈ 1.4e16 parameters (the allocator said "you tried to allocate 219902325555200 bytes").
  const std::string huge = error_of([&] {
    parse_bert_config(R"({"vocab_size": 30522, "hidden_size": 16777216, "num_hidden_layers": 12, "num_attention_heads": 16,
                          "intermediate_size": 3072, "max_position_embeddings": 512})",
                      "g/config.json");
  });
  EXPECT_NE(huge.find("g/config.json: hidden_size 16777216, num_hidden_layers 12"), std::string::npos) << huge;
  EXPECT_NE(huge.find("GiB in float32: more than this machine's"), std::string::npos) << huge;
}

TEST(BertEncoder, RejectsBadOptions) {
  BertEncoderOptions too_short;
  too_short.max_len = 1;
  EXPECT_THROW(BertEncoder(tiny_config(), too_short), ConfigError);
  BertEncoderOptions too_long;
  too_long.max_len = 1000;
  EXPECT_EQ(BertEncoder(tiny_config(), too_long)->options().max_len, 64) << "capped at max_position_embeddings";
  BertEncoderOptions bad_dropout;
  bad_dropout.dropout = 1.5;
  EXPECT_THROW(BertEncoder(tiny_config(), bad_dropout), ConfigError);

  BertEncoder encoder = random_encoder(tiny_config(), 1);
  TokenizedCorpus corpus;
  corpus.append(std::vector<std::int32_t>{kCls, 50, kSep});
  const std::vector<std::int64_t> rows{0};
  const std::string message = error_of([&] { encoder->encode(corpus, rows); });
  EXPECT_NE(message.find("token id 50"), std::string::npos) << message;
}

TEST(BertEncoder, EncodesToHiddenSizeAndHandlesEmptyBatches) {
  BertEncoder encoder = random_encoder(tiny_config(), 1);
  EXPECT_EQ(encoder->output_dim(), 32);
  EXPECT_EQ(encoder->device(), torch::Device(torch::kCPU));
  const TokenizedCorpus corpus = make_corpus({5, 9, 2});
  const torch::Tensor out = encode_all(encoder, corpus);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{3, 32}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  const torch::Tensor none = encoder->encode(corpus, {});
  EXPECT_EQ(none.sizes(), (std::vector<std::int64_t>{0, 32}));
}

TEST(BertEncoder, SaveThenLoadGivesIdenticalOutputs) {
  test::TempDir dir;
  const BertConfig config = tiny_config();
  BertEncoder original = random_encoder(config, 11);
  save_bert_encoder(original, config, dir / "model");
  EXPECT_TRUE(std::filesystem::exists(dir / "model" / "config.json"));

  torch::manual_seed(999);  // the loaded weights must replace the fresh random ones
  BertEncoder loaded = load_bert_encoder(dir / "model");
  loaded->eval();
  EXPECT_EQ(loaded->config().hidden_size, 32);
  EXPECT_EQ(loaded->config().num_layers, 2);

  const TokenizedCorpus corpus = make_corpus({6, 12, 3, 20});
  const torch::Tensor expected = encode_all(original, corpus);
  EXPECT_TRUE(torch::equal(encode_all(loaded, corpus), expected));

  BertEncoder other = random_encoder(config, 12);
  EXPECT_FALSE(torch::allclose(encode_all(other, corpus), expected, 1e-3, 1e-3)) << "seeds give different models";

  // The file carries Hugging Face BertModel names.
  const SafetensorsFile file = SafetensorsFile::open(dir / "model" / "model.safetensors");
  EXPECT_NE(file.find("embeddings.word_embeddings.weight"), nullptr);
  EXPECT_NE(file.find("embeddings.token_type_embeddings.weight"), nullptr);
  EXPECT_NE(file.find("encoder.layer.1.attention.self.query.weight"), nullptr);
  EXPECT_NE(file.find("encoder.layer.1.attention.output.LayerNorm.bias"), nullptr);
  EXPECT_NE(file.find("encoder.layer.0.intermediate.dense.weight"), nullptr);
  EXPECT_NE(file.find("encoder.layer.0.output.dense.bias"), nullptr);
  EXPECT_EQ(file.tensors().size(), 5u + 2u * 16u);
}

TEST(BertEncoder, Bf16AutocastStaysCloseToFp32AndEndsWithTheForward) {
  // The same weights encoded in fp32 and under bf16 autocast: fp32 output either way, the bf16 one close
  // (bf16 keeps 8 bits of mantissa: ~0.4% per product) but not identical, gradients reach fp32 weights, and
  // after the autocast forward a plain one gives the fp32 result again bit for bit.
  const BertConfig config = tiny_config();
  BertEncoderOptions mixed;
  mixed.autocast = torch::kBFloat16;
  BertEncoder plain = random_encoder(config, 5);
  BertEncoder autocast = random_encoder(config, 5, mixed);
  const TokenizedCorpus corpus = make_corpus({6, 12, 3, 20});
  const torch::Tensor expected = encode_all(plain, corpus);
  const torch::Tensor got = encode_all(autocast, corpus);
  EXPECT_EQ(got.scalar_type(), torch::kFloat);
  EXPECT_FALSE(torch::equal(got, expected)) << "autocast changed nothing: the products did not run in bf16";
  const double cosine = torch::cosine_similarity(got, expected, 1).min().item<double>();
  EXPECT_GT(cosine, 0.995);
  EXPECT_TRUE(torch::equal(encode_all(plain, corpus), expected)) << "autocast leaked out of the bf16 forward";

  autocast->train();
  const std::vector<std::int64_t> rows = all_rows(corpus);
  autocast->encode(corpus, rows).pow(2).sum().backward();
  for (const auto& p : autocast->parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kFloat);
    if (p.grad().defined()) {
      EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);
    }
  }
  EXPECT_TRUE(autocast->named_parameters()["encoder.layer.0.attention.self.query.weight"].grad().defined());
}

TEST(BertEncoder, PaddingDoesNotChangeAText) {
  const TokenizedCorpus corpus = make_corpus({5, 17, 9});
  for (const BertPooling pooling : {BertPooling::mean, BertPooling::cls}) {
    BertEncoderOptions options;
    options.pooling = pooling;
    BertEncoder encoder = random_encoder(tiny_config(), 3, options);
    torch::NoGradGuard no_grad;
    const std::vector<std::int64_t> alone{0}, batch{0, 1, 2}, reordered{1, 2, 0};
    const torch::Tensor single = encoder->encode(corpus, alone);
    const torch::Tensor in_batch = encoder->encode(corpus, batch);
    const torch::Tensor other_order = encoder->encode(corpus, reordered);
    EXPECT_TRUE(torch::allclose(single[0], in_batch[0], 1e-5, 1e-5)) << (single[0] - in_batch[0]).abs().max();
    EXPECT_TRUE(torch::allclose(in_batch[2], other_order[1], 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(in_batch[0], other_order[2], 1e-5, 1e-5));
  }
}

TEST(BertEncoder, JoinedQueriesAndLabelsEncodeAsTheirSeparatePasses) {
  // Queries of 12-16 tokens and labels of 10-14 from two corpora: one padded pass gives each row what its own
  // pass gives (the padding is masked out), in order, queries first.
  const TokenizedCorpus queries = make_corpus({12, 16, 14}, 7), labels = make_corpus({10, 14, 11, 13}, 9);
  BertEncoder encoder = random_encoder(tiny_config(), 3);
  torch::NoGradGuard no_grad;
  const auto query_input = encoder->prepare_input(queries, all_rows(queries), true);
  const auto label_input = encoder->prepare_input(labels, all_rows(labels), true);
  const auto joined = encoder->join_inputs(*query_input, *label_input);
  ASSERT_NE(joined, nullptr);
  const torch::Tensor both = encoder->encode_input(*joined);
  ASSERT_EQ(both.size(0), 7);
  const torch::Tensor expected = torch::cat({encode_all(encoder, queries), encode_all(encoder, labels)});
  EXPECT_TRUE(torch::allclose(both, expected, 1e-5, 1e-5)) << (both - expected).abs().max();

  // Labels of 3 tokens beside queries of 16: padding them to 16 would add far more than a quarter: apart.
  const TokenizedCorpus short_labels = make_corpus({3, 3, 3, 3}, 9);
  EXPECT_EQ(encoder->join_inputs(*query_input, *encoder->prepare_input(short_labels, all_rows(short_labels), true)), nullptr);
}

TEST(BertEncoder, PackedTokensGiveThePaddedPassesVectorsAndGradients) {
  // Texts of 3 to 30 tokens: padded to 30, two thirds of the positions are padding. Packed, only the real tokens go
  // through the projections and MLPs; the vectors, and the gradients a loss on them gives every parameter, are the
  // padded pass's up to float rounding. Queries and labels joined into one pass pack the same way.
  const TokenizedCorpus corpus = make_corpus({3, 30, 7, 5, 12, 4}, 11), labels = make_corpus({20, 25, 28}, 13);
  for (const BertPooling pooling : {BertPooling::mean, BertPooling::cls}) {
    BertEncoderOptions padded_options, packed_options;
    padded_options.pooling = packed_options.pooling = pooling;
    padded_options.dropout = packed_options.dropout = 0.0;
    padded_options.packing = BertPacking::off;
    packed_options.packing = BertPacking::on;
    BertEncoder padded = random_encoder(tiny_config(), 21, padded_options);
    BertEncoder packed = random_encoder(tiny_config(), 21, packed_options);
    padded->train();
    packed->train();
    const auto rows = all_rows(corpus);
    const torch::Tensor a = padded->encode(corpus, rows);
    const torch::Tensor b = packed->encode(corpus, rows);
    ASSERT_TRUE(torch::allclose(a, b, 1e-5, 1e-5)) << (a - b).abs().max();
    a.pow(2).sum().backward();
    b.pow(2).sum().backward();
    auto padded_parameters = padded->named_parameters();
    // Float rounding is relative to the gradients' size as a whole: a sum that cancels to ~1e-6 carries the rounding of
    // its ~1e-1 terms.
    double overall = 0;
    for (const auto& item : padded_parameters) overall = std::max(overall, item.value().grad().abs().max().item<double>());
    for (const auto& item : packed->named_parameters()) {
      const std::string& name = item.key();
      const torch::Tensor& parameter = item.value();
      const torch::Tensor expected = padded_parameters[name].grad();
      ASSERT_TRUE(parameter.grad().defined()) << name;
      const double scale = expected.abs().max().item<double>();
      EXPECT_LE((parameter.grad() - expected).abs().max().item<double>(), 1e-4 * scale + 1e-5 * overall)
          << name << " (largest entry " << scale << ", of all gradients " << overall << ")";
    }
    torch::NoGradGuard no_grad;
    packed->eval();
    const auto joined = packed->join_inputs(*packed->prepare_input(corpus, rows, true), *packed->prepare_input(labels, all_rows(labels), true));
    ASSERT_NE(joined, nullptr);
    const torch::Tensor both = packed->encode_input(*joined);
    const torch::Tensor apart = torch::cat({encode_all(packed, corpus), encode_all(packed, labels)});
    EXPECT_TRUE(torch::allclose(both, apart, 1e-5, 1e-5)) << (both - apart).abs().max();
  }
}

TEST(BertEncoder, AutomaticPackingPacksBatchesWithATenthOrMoreOfPadding) {
  BertEncoder encoder = random_encoder(tiny_config(), 3);
  EXPECT_FALSE(encoder->packs(100, 100));
  EXPECT_FALSE(encoder->packs(91, 100));
  EXPECT_TRUE(encoder->packs(90, 100));
  BertEncoderOptions off;
  off.packing = BertPacking::off;
  EXPECT_FALSE(random_encoder(tiny_config(), 3, off)->packs(10, 100));
}

TEST(BertEncoder, TruncatesLongTextsKeepingTheFinalSep) {
  BertEncoderOptions options;
  options.max_len = 8;
  BertEncoder encoder = random_encoder(tiny_config(), 4, options);
  const TokenizedCorpus corpus = make_corpus({20, 4});
  const std::vector<std::int64_t> rows{0, 1};
  const BertBatch batch = encoder->make_batch(corpus, rows);
  ASSERT_EQ(batch.input_ids.sizes(), (std::vector<std::int64_t>{2, 8}));
  const auto tokens = corpus.tokens(0);
  for (std::int64_t i = 0; i < 7; ++i) EXPECT_EQ(batch.input_ids[0][i].item<std::int64_t>(), tokens[static_cast<std::size_t>(i)]);
  EXPECT_EQ(batch.input_ids[0][7].item<std::int64_t>(), kSep);
  EXPECT_EQ(batch.input_ids[1][3].item<std::int64_t>(), kSep);
  EXPECT_EQ(batch.input_ids[1][4].item<std::int64_t>(), 0) << "padded with id 0";
  EXPECT_EQ(batch.attention_mask.sum(1)[0].item<std::int64_t>(), 8);
  EXPECT_EQ(batch.attention_mask.sum(1)[1].item<std::int64_t>(), 4);

  TokenizedCorpus truncated;
  std::vector<std::int32_t> kept(tokens.begin(), tokens.begin() + 7);
  kept.push_back(tokens.back());
  truncated.append(kept);
  const std::vector<std::int64_t> first{0};
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(encoder->encode(corpus, first), encoder->encode(truncated, first), 1e-6, 1e-6));
}

TEST(BertEncoder, MeanAndClsPoolingDifferAndClsIsTheFirstPosition) {
  const TokenizedCorpus corpus = make_corpus({6, 10});
  const std::vector<std::int64_t> rows{0, 1};
  BertEncoderOptions cls_options;
  cls_options.pooling = BertPooling::cls;
  BertEncoder mean = random_encoder(tiny_config(), 5);
  BertEncoder cls = random_encoder(tiny_config(), 5, cls_options);  // same seed: same weights
  torch::NoGradGuard no_grad;
  const torch::Tensor mean_out = mean->encode(corpus, rows);
  const torch::Tensor cls_out = cls->encode(corpus, rows);
  EXPECT_FALSE(torch::allclose(mean_out, cls_out, 1e-3, 1e-3));

  const BertBatch batch = cls->make_batch(corpus, rows);
  const torch::Tensor hidden = cls->forward(batch.input_ids, batch.attention_mask);
  EXPECT_TRUE(torch::allclose(cls_out, hidden.select(1, 0), 1e-6, 1e-6));
  // Mean over the real tokens only: text 0 has 6 of 10 positions.
  EXPECT_TRUE(torch::allclose(mean_out[0], hidden[0].slice(0, 0, 6).mean(0), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(mean_out[1], hidden[1].mean(0), 1e-5, 1e-5));
}

/// Straightforward re-implementation of a BERT forward pass for one text (no padding at all), from the
/// module's parameters by Hugging Face name.
torch::Tensor reference_hidden(BertEncoder& encoder, const std::vector<std::int64_t>& ids) {
  const BertConfig& c = encoder->config();
  auto p = encoder->named_parameters();
  auto layer_norm = [&](const torch::Tensor& x, const std::string& prefix) {
    const torch::Tensor mu = x.mean(-1, true);
    const torch::Tensor var = (x - mu).pow(2).mean(-1, true);
    return (x - mu) / torch::sqrt(var + c.layer_norm_eps) * p[prefix + ".weight"] + p[prefix + ".bias"];
  };
  auto linear = [&](const torch::Tensor& x, const std::string& prefix) {
    return torch::matmul(x, p[prefix + ".weight"].t()) + p[prefix + ".bias"];
  };
  const auto n = static_cast<std::int64_t>(ids.size());
  torch::Tensor x = torch::zeros({n, c.hidden_size});
  for (std::int64_t i = 0; i < n; ++i)
    x[i] = p["embeddings.word_embeddings.weight"][ids[static_cast<std::size_t>(i)]] +
           p["embeddings.position_embeddings.weight"][i] + p["embeddings.token_type_embeddings.weight"][0];
  x = layer_norm(x, "embeddings.LayerNorm");
  const std::int64_t d = c.head_dim();
  for (std::int64_t l = 0; l < c.num_layers; ++l) {
    const std::string at = "encoder.layer." + std::to_string(l) + ".";
    const torch::Tensor q = linear(x, at + "attention.self.query");
    const torch::Tensor k = linear(x, at + "attention.self.key");
    const torch::Tensor v = linear(x, at + "attention.self.value");
    torch::Tensor context = torch::zeros({n, c.hidden_size});
    for (std::int64_t h = 0; h < c.num_heads; ++h) {
      for (std::int64_t i = 0; i < n; ++i) {
        std::vector<double> scores(static_cast<std::size_t>(n));
        double max_score = -1e300;
        for (std::int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (std::int64_t e = h * d; e < (h + 1) * d; ++e) dot += q[i][e].item<double>() * k[j][e].item<double>();
          scores[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
          max_score = std::max(max_score, scores[static_cast<std::size_t>(j)]);
        }
        double total = 0;
        for (double& s : scores) total += (s = std::exp(s - max_score));
        for (std::int64_t e = h * d; e < (h + 1) * d; ++e) {
          double sum = 0;
          for (std::int64_t j = 0; j < n; ++j) sum += scores[static_cast<std::size_t>(j)] / total * v[j][e].item<double>();
          context[i][e] = sum;
        }
      }
    }
    x = layer_norm(x + linear(context, at + "attention.output.dense"), at + "attention.output.LayerNorm");
    torch::Tensor inner = linear(x, at + "intermediate.dense");
    if (c.activation == BertActivation::gelu) {
      inner = 0.5 * inner * (1.0 + torch::erf(inner / std::sqrt(2.0)));
    } else {
      inner = 0.5 * inner * (1.0 + torch::tanh(std::sqrt(2.0 / std::numbers::pi) * (inner + 0.044715 * inner.pow(3))));
    }
    x = layer_norm(x + linear(inner, at + "output.dense"), at + "output.LayerNorm");
  }
  return x;
}

TEST(BertEncoder, MatchesAHandWrittenForwardPass) {
  for (const BertActivation activation : {BertActivation::gelu, BertActivation::gelu_tanh}) {
    BertConfig config;
    config.vocab_size = 20;
    config.hidden_size = 8;
    config.num_layers = 1;
    config.num_heads = 2;
    config.intermediate_size = 16;
    config.max_position_embeddings = 16;
    config.activation = activation;
    BertEncoder encoder = random_encoder(config, 21);
    {  // LayerNorm parameters away from (1, 0) so that they are exercised too
      torch::NoGradGuard no_grad;
      for (auto& item : encoder->named_parameters())
        if (item.key().find("LayerNorm") != std::string::npos) item.value().uniform_(0.5, 1.5);
    }
    TokenizedCorpus corpus;
    corpus.append(std::vector<std::int32_t>{kCls, 7, 11, kSep});
    corpus.append(std::vector<std::int32_t>{kCls, 5, 6, 19, 8, 13, kSep});
    const std::vector<std::int64_t> rows{0, 1};
    torch::NoGradGuard no_grad;
    const BertBatch batch = encoder->make_batch(corpus, rows);
    const torch::Tensor hidden = encoder->forward(batch.input_ids, batch.attention_mask);
    const torch::Tensor pooled = encoder->encode(corpus, rows);
    const std::vector<std::vector<std::int64_t>> texts{{kCls, 7, 11, kSep}, {kCls, 5, 6, 19, 8, 13, kSep}};
    for (std::size_t t = 0; t < texts.size(); ++t) {
      const torch::Tensor expected = reference_hidden(encoder, texts[t]);
      const auto n = static_cast<std::int64_t>(texts[t].size());
      const auto row = static_cast<std::int64_t>(t);
      EXPECT_TRUE(torch::allclose(hidden[row].slice(0, 0, n), expected, 1e-4, 1e-5))
          << (hidden[row].slice(0, 0, n) - expected).abs().max();
      EXPECT_TRUE(torch::allclose(pooled[row], expected.mean(0), 1e-4, 1e-5));
    }
  }
}

TEST(BertEncoder, DropoutOnlyInTrainingAndGradientsFlow) {
  BertEncoder encoder = random_encoder(tiny_config(), 6);
  const TokenizedCorpus corpus = make_corpus({8, 12});
  const std::vector<std::int64_t> rows{0, 1};
  encoder->train();
  const torch::Tensor a = encoder->encode(corpus, rows);
  const torch::Tensor b = encoder->encode(corpus, rows);
  EXPECT_FALSE(torch::allclose(a, b)) << "dropout active in train()";
  a.pow(2).sum().backward();
  auto params = encoder->named_parameters();
  const torch::Tensor grad = params["encoder.layer.0.attention.self.query.weight"].grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(params["embeddings.word_embeddings.weight"].grad()[0].abs().sum().item<double>(), 0.0)
      << "the pad row gets no gradient";
  encoder->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(encoder->encode(corpus, rows), encoder->encode(corpus, rows)));

  BertEncoderOptions no_dropout;
  no_dropout.dropout = 0.0;
  BertEncoder plain = random_encoder(tiny_config(), 6, no_dropout);
  plain->train();
  EXPECT_TRUE(torch::allclose(plain->encode(corpus, rows), encoder->encode(corpus, rows), 1e-6, 1e-6));
}

TEST(BertEncoder, LoadNamesAMissingTensor) {
  test::TempDir dir;
  const BertConfig config = tiny_config();
  BertEncoder encoder = random_encoder(config, 8);
  auto named = parameters_of(encoder);
  std::erase_if(named, [](const auto& entry) { return entry.first == "encoder.layer.1.attention.self.key.weight"; });
  write_checkpoint(dir / "m", bert_config_to_json(config), named);
  try {
    load_bert_encoder(dir / "m");
    FAIL() << "loaded without the key weight";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find("encoder.layer.1.attention.self.key.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("missing"), std::string::npos) << message;
  }
  std::filesystem::remove(dir / "m" / "model.safetensors");
  EXPECT_THROW(load_bert_encoder(dir / "m"), InputError);
  EXPECT_THROW(load_bert_encoder(dir / "nowhere"), InputError);
}

TEST(BertEncoder, LoadNamesATensorWithTheWrongShape) {
  test::TempDir dir;
  const BertConfig config = tiny_config();
  BertEncoder encoder = random_encoder(config, 9);
  auto named = parameters_of(encoder);
  for (auto& [name, tensor] : named)
    if (name == "encoder.layer.0.intermediate.dense.weight") tensor = torch::zeros({48, 32});
  write_checkpoint(dir / "m", bert_config_to_json(config), named);
  const std::string message = error_of([&] { load_bert_encoder(dir / "m"); });
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("encoder.layer.0.intermediate.dense.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("[48, 32]"), std::string::npos) << message;
  EXPECT_NE(message.find("[64, 32]"), std::string::npos) << message;

  // An integer tensor where floats are needed.
  auto integer = parameters_of(encoder);
  write_checkpoint(dir / "i", bert_config_to_json(config), integer, SafeDtype::I64);
  const std::string dtype = error_of([&] { load_bert_encoder(dir / "i"); });
  EXPECT_NE(dtype.find("I64"), std::string::npos) << dtype;
}

TEST(BertEncoder, LoadsPrefixedGammaBetaNamesInBf16AndIgnoresUnusedTensors) {
  test::TempDir dir;
  const BertConfig config = tiny_config();
  BertEncoder original = random_encoder(config, 13);
  {  // round the weights to bf16 so that the bf16 checkpoint holds them exactly
    torch::NoGradGuard no_grad;
    for (auto& item : original->named_parameters()) item.value().copy_(item.value().to(torch::kBFloat16).to(torch::kFloat));
  }
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto [name, tensor] : parameters_of(original)) {
    const auto dot = name.rfind('.');
    if (name.find("LayerNorm") != std::string::npos)
      name = name.substr(0, dot + 1) + (name.substr(dot + 1) == "weight" ? "gamma" : "beta");
    named.emplace_back("bert." + name, tensor);
  }
  named.emplace_back("bert.pooler.dense.weight", torch::ones({32, 32}));
  named.emplace_back("cls.predictions.bias", torch::ones({50}));
  write_checkpoint(dir / "m", bert_config_to_json(config), named, SafeDtype::BF16);

  BertEncoder loaded = load_bert_encoder(dir / "m");
  loaded->eval();
  const TokenizedCorpus corpus = make_corpus({7, 4});
  EXPECT_TRUE(torch::equal(encode_all(loaded, corpus), encode_all(original, corpus)));
}

/// Hugging Face DistilBertModel name of a BertModel-style parameter name, spelled out independently.
std::string hf_distilbert_name(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> parts{
      {".attention.self.query.", ".attention.q_lin."},     {".attention.self.key.", ".attention.k_lin."},
      {".attention.self.value.", ".attention.v_lin."},     {".attention.output.dense.", ".attention.out_lin."},
      {".attention.output.LayerNorm.", ".sa_layer_norm."}, {".intermediate.dense.", ".ffn.lin1."},
      {".output.dense.", ".ffn.lin2."},                    {".output.LayerNorm.", ".output_layer_norm."}};
  if (name.rfind("embeddings.", 0) == 0) return "distilbert." + name;
  std::string out = "distilbert.transformer." + name.substr(std::string("encoder.").size());
  for (const auto& [from, to] : parts) {
    const auto at = out.find(from);
    if (at != std::string::npos) return out.replace(at, from.size(), to);
  }
  ADD_FAILURE() << "unmapped " << name;
  return out;
}

TEST(BertEncoder, LoadsDistilBertNames) {
  test::TempDir dir;
  const BertConfig config = tiny_config(BertFamily::distilbert);
  BertEncoder original = random_encoder(config, 17);
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& [name, tensor] : parameters_of(original)) {
    EXPECT_EQ(name.find("token_type"), std::string::npos) << "DistilBERT has no token types";
    named.emplace_back(hf_distilbert_name(name), tensor);
  }
  named.emplace_back("vocab_projector.weight", torch::zeros({50, 32}));
  const std::string config_json = R"({"architectures": ["DistilBertForMaskedLM"], "model_type": "distilbert",
      "vocab_size": 50, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64, "max_position_embeddings": 64,
      "activation": "gelu", "dropout": 0.1, "attention_dropout": 0.1, "pad_token_id": 0,
      "sinusoidal_pos_embds": false})";
  write_checkpoint(dir / "distil", config_json, named);

  BertEncoder loaded = load_bert_encoder(dir / "distil");
  loaded->eval();
  EXPECT_EQ(loaded->config().family, BertFamily::distilbert);
  const TokenizedCorpus corpus = make_corpus({9, 5, 14});
  const torch::Tensor expected = encode_all(original, corpus);
  EXPECT_TRUE(torch::equal(encode_all(loaded, corpus), expected));

  // save_bert_encoder writes DistilBERT names for a DistilBERT config, and reads them back.
  save_bert_encoder(loaded, loaded->config(), dir / "saved");
  const SafetensorsFile file = SafetensorsFile::open(dir / "saved" / "model.safetensors");
  EXPECT_NE(file.find("transformer.layer.1.attention.q_lin.weight"), nullptr);
  EXPECT_NE(file.find("transformer.layer.0.output_layer_norm.bias"), nullptr);
  BertEncoder again = load_bert_encoder(dir / "saved");
  again->eval();
  EXPECT_TRUE(torch::equal(encode_all(again, corpus), expected));
}

}  // namespace
}  // namespace xmc
