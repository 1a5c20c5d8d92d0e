// Image fusion in the transformer encoders (ViXML), checked through identities that need no reference run:
// a projection that maps every image to the word embedding of token t must give exactly the encoding of the text
// with t written where the image goes (after a BERT text's [SEP]; between a decoder's "and its image:" and its
// EOS); a bank of zeros, or rows without images, must give the text-only model; rows of a batch with 0..M images
// encode as they do alone; late fusion adds the mean projection to the pooled vector.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/image_bank.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/model/decoder/decoder_config.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/model/image_fusion.h"
#include "tests/support/tiny_decoder_config.h"

namespace xmc {
namespace {

constexpr std::int32_t kCls = 2, kSep = 3;
constexpr std::int64_t kImageDim = 5;

BertConfig tiny_bert() {
  BertConfig config;
  config.vocab_size = 50;
  config.hidden_size = 32;
  config.num_layers = 2;
  config.num_heads = 4;
  config.intermediate_size = 64;
  config.max_position_embeddings = 64;
  return config;
}

TokenizedCorpus corpus_of(const std::vector<std::vector<std::int32_t>>& rows) {
  TokenizedCorpus corpus;
  for (const auto& row : rows) corpus.append(row);
  return corpus;
}

std::vector<std::int64_t> all_rows(std::int64_t n) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = i;
  return rows;
}

/// A bank of M = 3 slots per row whose first `images[r]` slots hold non-zero vectors (the rest zeros).
std::shared_ptr<const ImageBank> bank_with(const std::vector<int>& images, float scale = 1.0f) {
  const auto rows = static_cast<std::int64_t>(images.size());
  std::vector<float> values(static_cast<std::size_t>(rows * 3 * kImageDim), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (int s = 0; s < images[static_cast<std::size_t>(r)]; ++s)
      for (std::int64_t i = 0; i < kImageDim; ++i)
        values[static_cast<std::size_t>((r * 3 + s) * kImageDim + i)] = scale * static_cast<float>(1 + r + s + i);
  return std::make_shared<const ImageBank>(ImageBank::from_values(rows, 3, kImageDim, std::move(values)));
}

std::vector<std::int64_t> as_vector(const torch::Tensor& t) {
  const torch::Tensor values = t.to(torch::kLong).contiguous();
  return {values.data_ptr<std::int64_t>(), values.data_ptr<std::int64_t>() + values.numel()};
}

torch::Tensor& parameter(torch::nn::Module& module, const std::string& name) {
  for (auto& item : module.named_parameters(/*recurse=*/true))
    if (item.key() == name) return item.value();
  throw std::runtime_error("no parameter " + name);
}

/// Makes the projection send every image to `target` (weight 0, bias = target).
void project_to(torch::nn::Module& encoder, const torch::Tensor& target) {
  torch::NoGradGuard no_grad;
  parameter(encoder, "image_projection.linear.weight").zero_();
  parameter(encoder, "image_projection.linear.bias").copy_(target);
}

BertEncoder bert(std::uint64_t seed, std::int64_t max_len = 16) {
  torch::manual_seed(static_cast<std::int64_t>(seed));
  BertEncoder encoder(tiny_bert(), BertEncoderOptions{.max_len = max_len, .dropout = 0.0});
  encoder->eval();
  return encoder;
}

DecoderEncoder decoder(std::uint64_t seed, std::int64_t max_len = 16) {
  torch::manual_seed(static_cast<std::int64_t>(seed));
  DecoderEncoder model(test::tiny_decoder_config(64), DecoderEncoderOptions{.max_len = max_len});
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : model->base_weights())
    tensor->copy_(name.find("norm") != std::string::npos ? 1.0 + 0.1 * torch::randn(tensor->sizes()) : 0.3 * torch::randn(tensor->sizes()));
  model->eval();
  return model;
}

TEST(ImageFusion, BertImageTokensSitAfterTheSepAsWordsWouldAtTheNextPositions) {
  BertEncoder fused = bert(1);
  fused->attach_images({.max_images = 3, .kind = ImageFusionKind::early, .image_dim = kImageDim});
  BertEncoder plain = bert(1);
  constexpr std::int32_t kImageWord = 17;
  project_to(*fused, fused->named_parameters()["embeddings.word_embeddings.weight"][kImageWord]);

  TokenizedCorpus with_images = corpus_of({{kCls, 10, 11, 12, kSep}, {kCls, 20, kSep}, {kCls, 30, 31, kSep}});
  with_images.images = bank_with({1, 3, 0});
  const TokenizedCorpus spelled_out = corpus_of({{kCls, 10, 11, 12, kSep, kImageWord},
                                                 {kCls, 20, kSep, kImageWord, kImageWord, kImageWord},
                                                 {kCls, 30, 31, kSep}});
  torch::NoGradGuard no_grad;
  const torch::Tensor got = fused->encode(with_images, all_rows(3));
  const torch::Tensor expected = plain->encode(spelled_out, all_rows(3));
  EXPECT_TRUE(torch::allclose(got, expected, 1e-5, 1e-5)) << (got - expected).abs().max().item<double>();
}

TEST(ImageFusion, BertMasksAndPositionsCoverZeroToMImagesPerRowInOneBatch) {
  BertEncoder fused = bert(2, /*max_len=*/5);
  fused->attach_images({.max_images = 2, .kind = ImageFusionKind::early, .image_dim = kImageDim});
  TokenizedCorpus corpus = corpus_of({{kCls, 10, kSep}, {kCls, 20, 21, 22, 23, 24, 25, kSep}, {kCls, 30, 31, kSep}});
  corpus.images = bank_with({0, 3, 1});  // row 1: three images, two taken; its text cut to max_len 5
  const BertBatch batch = fused->make_batch(corpus, all_rows(3));
  EXPECT_EQ(batch.images.per_row, (std::vector<std::int64_t>{0, 2, 1}));
  const torch::Tensor real = batch.attention_mask.to(torch::kLong).sum(1);
  EXPECT_EQ(real[0].item<std::int64_t>(), 3);
  EXPECT_EQ(real[1].item<std::int64_t>(), 5 + 2);
  EXPECT_EQ(real[2].item<std::int64_t>(), 4 + 1);
  EXPECT_EQ(batch.input_ids.size(1), 7);
  EXPECT_EQ(as_vector(batch.images.rows), (std::vector<std::int64_t>{1, 1, 2}));
  EXPECT_EQ(as_vector(batch.images.positions), (std::vector<std::int64_t>{5, 6, 4}));

  torch::NoGradGuard no_grad;
  const torch::Tensor together = fused->encode(corpus, all_rows(3));
  for (std::int64_t r = 0; r < 3; ++r) {
    const std::vector<std::int64_t> alone{r};
    EXPECT_TRUE(torch::allclose(together[r], fused->encode(corpus, alone)[0], 1e-5, 1e-5)) << "row " << r;
  }
  BertEncoder plain = bert(2, 5);
  TokenizedCorpus texts = corpus;
  texts.images = nullptr;
  EXPECT_TRUE(torch::allclose(together[0], plain->encode(texts, std::vector<std::int64_t>{0})[0], 1e-6, 1e-6)) << "a row without images is its text";
  EXPECT_FALSE(torch::allclose(together[2], plain->encode(texts, std::vector<std::int64_t>{2})[0], 1e-3, 1e-3)) << "a row's image changes it";
}

TEST(ImageFusion, ABankOfZerosOrNoBankGivesTheTextOnlyModel) {
  BertEncoder fused = bert(3);
  fused->attach_images({.max_images = 3, .kind = ImageFusionKind::early, .image_dim = kImageDim});
  BertEncoder plain = bert(3);
  TokenizedCorpus corpus = corpus_of({{kCls, 10, 11, kSep}, {kCls, 20, kSep}});
  torch::NoGradGuard no_grad;
  const torch::Tensor text_only = plain->encode(corpus, all_rows(2));
  EXPECT_TRUE(torch::equal(fused->encode(corpus, all_rows(2)), text_only));
  corpus.images = bank_with({3, 2}, /*scale=*/0.0f);
  EXPECT_TRUE(torch::equal(fused->encode(corpus, all_rows(2)), text_only));
}

TEST(ImageFusion, LateFusionAddsTheMeanProjectionToThePooledVector) {
  BertEncoder fused = bert(4);
  fused->attach_images({.max_images = 3, .kind = ImageFusionKind::late, .image_dim = kImageDim});
  BertEncoder plain = bert(4);
  const torch::Tensor shift = torch::linspace(-1.0, 1.0, 32);
  project_to(*fused, shift);
  TokenizedCorpus corpus = corpus_of({{kCls, 10, 11, kSep}, {kCls, 20, kSep}});
  corpus.images = bank_with({2, 0});
  torch::NoGradGuard no_grad;
  TokenizedCorpus texts = corpus;
  texts.images = nullptr;
  const torch::Tensor text_only = plain->encode(texts, all_rows(2));
  const torch::Tensor got = fused->encode(corpus, all_rows(2));
  EXPECT_TRUE(torch::allclose(got[0], text_only[0] + shift, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(got[1], text_only[1], 1e-6, 1e-6));
}

TEST(ImageFusion, TheProjectionIsTrainedAndLeftOutOfAnExportedTextModel) {
  BertEncoder fused = bert(5);
  fused->attach_images({.max_images = 1, .kind = ImageFusionKind::early, .image_dim = kImageDim});
  TokenizedCorpus corpus = corpus_of({{kCls, 10, kSep}});
  corpus.images = bank_with({1});
  fused->encode(corpus, all_rows(1)).pow(2).sum().backward();
  EXPECT_GT(parameter(*fused, "image_projection.linear.weight").grad().abs().sum().item<double>(), 0.0);

  const auto folder = std::filesystem::temp_directory_path() / ("xmc-image-export-" + std::to_string(::getpid()));
  save_bert_encoder(fused, fused->config(), folder);
  BertEncoder loaded = load_bert_encoder(folder, {.max_len = 16, .dropout = 0.0});  // would fail on an unknown tensor
  EXPECT_EQ(loaded->named_parameters().size() + 2, fused->named_parameters().size());
  std::filesystem::remove_all(folder);
  EXPECT_THROW(fused->attach_images({.max_images = 1, .image_dim = kImageDim}), ConfigError);
}

TEST(ImageFusion, DecoderImageTokensComeAfterThePrefixAndBeforeTheEos) {
  constexpr std::int32_t kEos = 49, kImageWord = 23;
  const std::vector<std::int32_t> prefix{40, 41, 42};
  DecoderEncoder fused = decoder(6);
  fused->attach_images({.max_images = 3, .kind = ImageFusionKind::early, .image_dim = kImageDim}, prefix);
  DecoderEncoder plain = decoder(6);
  project_to(*fused, fused->base_weights().front().second->index({kImageWord}));

  TokenizedCorpus corpus = corpus_of({{5, 6, 7, kEos}, {8, kEos}, {9, 10, kEos}});
  corpus.images = bank_with({2, 0, 1});
  const TokenizedCorpus spelled_out = corpus_of({{5, 6, 7, 40, 41, 42, kImageWord, kImageWord, kEos}, {8, kEos}, {9, 10, 40, 41, 42, kImageWord, kEos}});
  torch::NoGradGuard no_grad;
  const torch::Tensor got = fused->encode(corpus, all_rows(3));
  const torch::Tensor expected = plain->encode(spelled_out, all_rows(3));
  EXPECT_TRUE(torch::allclose(got, expected, 1e-5, 1e-5)) << (got - expected).abs().max().item<double>();

  const DecoderBatch batch = fused->make_batch(corpus, all_rows(3));
  EXPECT_EQ(as_vector(batch.attention_mask.to(torch::kLong).sum(1)), (std::vector<std::int64_t>{9, 2, 7}));
  EXPECT_EQ(as_vector(batch.images.positions), (std::vector<std::int64_t>{6, 7, 5}));
}

TEST(ImageFusion, ACutDecoderTextKeepsItsEosAfterItsImages) {
  torch::manual_seed(7);
  DecoderEncoder fused(test::tiny_decoder_config(64), DecoderEncoderOptions{.pooling = DecoderPooling::last, .max_len = 4});
  fused->attach_images({.max_images = 2, .kind = ImageFusionKind::early, .image_dim = kImageDim}, {40});
  fused->eval();
  TokenizedCorpus corpus = corpus_of({{5, 6, 7, 8, 9, 49}, {8, 49}});  // row 0 is cut to max_len 4: 5 6 7 and its EOS
  corpus.images = bank_with({1, 2});
  const DecoderBatch batch = fused->make_batch(corpus, all_rows(2));
  const torch::Tensor ids = batch.input_ids;
  EXPECT_EQ(ids[0][5].item<std::int64_t>(), 49);  // 5 6 7 | 40 | image | EOS
  EXPECT_EQ(ids[1][4].item<std::int64_t>(), 49);  // 8 | 40 | image image | EOS
  EXPECT_EQ(ids[0][3].item<std::int64_t>(), 40);
}

TEST(ImageFusion, ABankOfAnotherEmbeddingSizeIsRefusedByName) {
  BertEncoder fused = bert(8);
  fused->attach_images({.max_images = 3, .kind = ImageFusionKind::early, .image_dim = kImageDim + 1});
  TokenizedCorpus corpus = corpus_of({{kCls, 10, kSep}});
  corpus.images = bank_with({1});
  try {
    fused->encode(corpus, all_rows(1));
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("holds embeddings of 5 numbers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xmc
