#pragma once
// The tests' gradient-caching problem: 6 queries of 2 words and 23 labels of 1 word over a vocabulary of 30, a
// bag-of-words model with a dropout head on a given device, decoupled softmax, label chunks of 5; and the plain
// computation that gradient caching must reproduce (the labels chunk by chunk, in the cache's order of draws, then
// the queries, one backward).
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "engine/loss/loss_entry.h"
#include "engine/loss/loss_options.h"
#include "engine/method/grad_cache.h"
#include "engine/method/xmc_model.h"
#include "engine/model/bow/bow_encoder.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc::test {

struct GradCacheCase {
  static constexpr std::int64_t kVocab = 30, kLabels = 23, kQueries = 6, kChunk = 5;

  GradCacheCase(torch::Device device, double dropout) {
    torch::manual_seed(0);
    std::mt19937_64 rng(1);
    const auto word = [&rng] { return static_cast<std::int32_t>(2 + rng() % 28); };
    for (std::int64_t i = 0; i < kQueries; ++i) queries.append(std::vector<std::int32_t>{word(), word()});
    for (std::int64_t i = 0; i < kLabels; ++i) labels.append(std::vector<std::int32_t>{word()});
    BowEncoderOptions options;
    options.vocab_size = kVocab;
    options.word_dim = 8;
    options.dim = 8;
    options.idf.assign(kVocab, 1.0f);
    options.device = device;
    model = XmcModel(std::make_shared<BowEncoderImpl>(options), 6, dropout);
    model->train();
    for (std::int64_t i = 0; i < kQueries; ++i) batch.push_back(i);
    mask = torch::zeros({kQueries, kLabels}, torch::kBool);
    for (std::int64_t i = 0; i < kQueries; ++i) mask[i][(i * 5) % kLabels] = true;
    loss = [](const torch::Tensor& s, const torch::Tensor& m) { return compute_loss(loss_entry("decoupled_softmax"), s, m, LossOptions{}); };
  }

  /// Every parameter's gradient as a dense CPU tensor (the bag-of-words table's is row-sparse on the CPU).
  std::vector<torch::Tensor> gradients() {
    std::vector<torch::Tensor> out;
    for (auto& p : model->parameters()) out.push_back((p.grad().is_sparse() ? p.grad().to_dense() : p.grad()).cpu().clone());
    return out;
  }

  /// The plain computation's loss and gradients; the model's gradients are zeroed after.
  std::pair<double, std::vector<torch::Tensor>> plain_backward() {
    std::vector<torch::Tensor> parts;
    for (std::int64_t start = 0; start < kLabels; start += kChunk) {
      std::vector<std::int64_t> rows;
      for (std::int64_t r = start; r < std::min(kLabels, start + kChunk); ++r) rows.push_back(r);
      parts.push_back(model->embed(labels, rows));
    }
    const torch::Tensor q = model->embed(queries, batch);
    const torch::Tensor value = loss(torch::matmul(q, torch::cat(parts).t()), mask.to(q.device()));
    value.backward();
    std::pair<double, std::vector<torch::Tensor>> out{value.item<double>(), gradients()};
    model->zero_grad();
    return out;
  }

  TokenizedCorpus queries, labels;
  XmcModel model{nullptr};
  std::vector<std::int64_t> batch;
  torch::Tensor mask;
  BatchLoss loss;
};

}  // namespace xmc::test
