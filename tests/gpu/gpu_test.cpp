// The CUDA path, on a machine with a GPU (every test skips itself without one): exact search on the GPU
// returns the CPU's top-k, balanced clustering on the GPU gives clusters of the allowed sizes covering every
// row, the bert forward under bf16 autocast on the GPU stays close to fp32 with fp32 weights and gradients, and
// hard-negative shortlists are found from queries and labels embedded on the GPU by every search, and a forward
// replayed for its gradient (gradient caching, activation checkpointing) draws the GPU's dropout masks again, and
// a checkpoint of a run on the GPU puts the GPU's generator back.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "engine/config/train_config.h"
#include "engine/data/dataset.h"
#include "engine/index/exact_search.h"
#include "engine/method/checkpoint.h"
#include "engine/method/method.h"
#include "engine/method/method_registry.h"
#include "engine/optim/gradient_clipping.h"
#include "engine/model/encoder_options.h"
#include "engine/train/training_run.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/data/csr_matrix.h"
#include "engine/method/grad_cache.h"
#include "engine/model/decoder/decoder_config.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/model/random_state.h"
#include "tests/support/grad_cache_case.h"
#include "tests/support/tiny_decoder_config.h"
#include "engine/sampler/balanced_clustering.h"
#include "engine/sampler/hard_negative_shortlist.h"

namespace xmc {
namespace {

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine"

TEST(GpuClipping, ClipsOnTheDeviceAsOnTheHostAndLeavesGradientsUnderTheLimitAsTheyWere) {
  REQUIRE_CUDA();
  torch::manual_seed(5);
  const torch::Tensor weight = torch::randn({64, 32}), bias = torch::randn({32});
  for (const double limit : {1e6, 0.5}) {  // under the limit (scaled by exactly 1 on the device), then clipped
    auto make = [&](torch::Device device) {
      torch::Tensor w = torch::zeros({64, 32}, device).requires_grad_(), b = torch::zeros({32}, device).requires_grad_();
      w.mutable_grad() = weight.to(device);
      b.mutable_grad() = bias.to(device);
      return std::vector<torch::Tensor>{w, b};
    };
    std::vector<torch::Tensor> host = make(torch::kCPU), device = make(torch::kCUDA);
    const double host_norm = clip_gradient_norm(host, limit).item<double>();
    const torch::Tensor device_norm = clip_gradient_norm(device, limit);
    ASSERT_TRUE(device_norm.is_cuda());
    EXPECT_NEAR(device_norm.item<double>(), host_norm, 1e-3 * host_norm);
    if (limit > 1e5) EXPECT_TRUE(torch::equal(device[0].grad().cpu(), weight));  // × 1 changes no bit
    EXPECT_TRUE(torch::allclose(device[0].grad().cpu(), host[0].grad(), 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(device[1].grad().cpu(), host[1].grad(), 1e-5, 1e-6));
  }
}

TEST(GpuSearch, ExactTopKOnTheGpuIsTheCpusTopK) {
  REQUIRE_CUDA();
  torch::manual_seed(3);
  const torch::Tensor queries = torch::nn::functional::normalize(torch::randn({3000, 64}), torch::nn::functional::NormalizeFuncOptions().dim(1));
  const torch::Tensor keys = torch::nn::functional::normalize(torch::randn({20000, 64}), torch::nn::functional::NormalizeFuncOptions().dim(1));
  const TopK cpu = exact_top_k(queries, keys, 10);
  const TopK gpu = exact_top_k(queries.cuda(), keys.cuda(), 10);
  ASSERT_TRUE(gpu.indices.is_cuda());
  EXPECT_TRUE(torch::allclose(gpu.scores.cpu(), cpu.scores, 1e-5, 1e-5));
  // Indices may differ only where two scores tie to float precision.
  const double agreement = gpu.indices.cpu().eq(cpu.indices).to(torch::kDouble).mean().item<double>();
  EXPECT_GT(agreement, 0.999);
}

TEST(GpuClustering, ClustersOnTheGpuHaveTheAllowedSizesAndCoverEveryRow) {
  REQUIRE_CUDA();
  torch::manual_seed(4);
  const std::int64_t rows = 10000, cluster_size = 16;
  const torch::Tensor embeddings =
      torch::nn::functional::normalize(torch::randn({rows, 32}), torch::nn::functional::NormalizeFuncOptions().dim(1)).cuda();
  const auto clusters = balanced_clusters(embeddings, cluster_size);
  std::set<std::int64_t> seen;
  for (const auto& cluster : clusters) {
    EXPECT_LE(static_cast<std::int64_t>(cluster.size()), cluster_size);
    EXPECT_GE(static_cast<std::int64_t>(cluster.size()), cluster_size / 2);
    for (const std::int64_t r : cluster) EXPECT_TRUE(seen.insert(r).second) << "row " << r << " in two clusters";
  }
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), rows);
}

TEST(GpuAutocast, Bf16BertOnTheGpuStaysCloseToFp32) {
  REQUIRE_CUDA();
  BertConfig config;
  config.vocab_size = 100;
  config.hidden_size = 64;
  config.num_layers = 2;
  config.num_heads = 4;
  config.intermediate_size = 128;
  config.max_position_embeddings = 64;
  BertEncoderOptions plain_options, mixed_options;
  plain_options.device = mixed_options.device = torch::kCUDA;
  mixed_options.autocast = torch::kBFloat16;
  torch::manual_seed(5);
  BertEncoder plain(config, plain_options);
  torch::manual_seed(5);
  BertEncoder mixed(config, mixed_options);
  TokenizedCorpus corpus;
  for (int text = 0; text < 8; ++text) {
    std::vector<std::int32_t> ids{2};
    for (int t = 0; t < 5 + 3 * text; ++t) ids.push_back(5 + (text * 7 + t * 13) % 90);
    ids.push_back(3);
    corpus.append(ids);
  }
  std::vector<std::int64_t> rows(8);
  for (std::int64_t r = 0; r < 8; ++r) rows[static_cast<std::size_t>(r)] = r;
  plain->eval();
  mixed->eval();
  torch::Tensor expected, got;
  {
    torch::NoGradGuard no_grad;
    expected = plain->encode(corpus, rows);
    got = mixed->encode(corpus, rows);
  }
  EXPECT_EQ(got.scalar_type(), torch::kFloat);
  EXPECT_GT(torch::cosine_similarity(got, expected, 1).min().item<double>(), 0.99);
  mixed->train();
  mixed->encode(corpus, rows).pow(2).sum().backward();
  for (const auto& p : mixed->parameters())
    if (p.grad().defined()) {
      EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);
    }
}

// A GPU's training embeds its queries and labels on the GPU, a slice at a time; the exact search gathers the labels on
// the CPU and the approximate ones search there. Each search must take that mix and find what the CPU finds.
TEST(GpuShortlists, EverySearchTakesQueriesAndLabelsEmbeddedOnTheGpu) {
  REQUIRE_CUDA();
  torch::manual_seed(6);
  const std::int64_t num_queries = 1500, num_labels = 4000, size = 20;
  const auto unit = [](torch::Tensor t) { return torch::nn::functional::normalize(t, torch::nn::functional::NormalizeFuncOptions().dim(1)); };
  const torch::Tensor queries = unit(torch::randn({num_queries, 32})), labels = unit(torch::randn({num_labels, 32}));
  std::vector<std::vector<std::int32_t>> rows;  // two positives each, ascending
  for (std::int64_t q = 0; q < num_queries; ++q) {
    const auto a = static_cast<std::int32_t>(q * 7 % num_labels), b = static_cast<std::int32_t>((q * 13 + 1) % num_labels);
    rows.push_back(a == b ? std::vector<std::int32_t>{a} : std::vector<std::int32_t>{std::min(a, b), std::max(a, b)});
  }
  const CsrMatrix positives = csr_from_rows(rows, num_labels);
  const torch::Tensor on_cpu = hard_negative_shortlist(queries, labels, positives, size);  // exact, all on the CPU
  const torch::Tensor gpu_queries = queries.cuda(), gpu_labels = labels.cuda();
  const RowEmbeddings query_rows{.count = num_queries, .embed = [&](std::int64_t b, std::int64_t e) { return gpu_queries.narrow(0, b, e - b); }};
  const RowEmbeddings label_rows{.count = num_labels, .embed = [&](std::int64_t b, std::int64_t e) { return gpu_labels.narrow(0, b, e - b); }};
  const auto shared = [&](const torch::Tensor& found) {  // share of the CPU's exact shortlist found
    const torch::Tensor got = found.cpu().to(torch::kInt64).contiguous(), want = on_cpu.to(torch::kInt64).contiguous();
    const auto* got_ids = got.data_ptr<std::int64_t>();
    const auto* want_ids = want.data_ptr<std::int64_t>();
    std::int64_t kept = 0;
    for (std::int64_t q = 0; q < num_queries; ++q) {
      const std::set<std::int64_t> have(got_ids + q * size, got_ids + (q + 1) * size);
      for (std::int64_t j = 0; j < size; ++j) kept += have.count(want_ids[q * size + j]);
    }
    return static_cast<double>(kept) / static_cast<double>(num_queries * size);
  };
  for (const std::string kind : {"exact", "hnsw", "ivf"})
    for (const bool bfloat16 : {false, true}) {
      if (bfloat16 && kind != "ivf") continue;
      SCOPED_TRACE(kind + (bfloat16 ? " in bfloat16" : ""));
      const ShortlistSearch search{.kind = kind, .probe = 16, .max_probe = 64, .bfloat16_products = bfloat16};
      torch::Tensor streamed, given;
      ASSERT_NO_THROW(streamed = hard_negative_shortlist(query_rows, label_rows, positives, size, silent_progress(), search));
      ASSERT_NO_THROW(given = hard_negative_shortlist(gpu_queries, gpu_labels, positives, size, silent_progress(), search));
      for (const torch::Tensor& found : {streamed, given}) {
        ASSERT_EQ(found.sizes(), on_cpu.sizes());
        const torch::Tensor ids = found.cpu().to(torch::kInt64);
        for (std::int64_t q = 0; q < num_queries; q += 97)  // never a query's own positives
          for (std::int64_t j = positives.indptr[q]; j < positives.indptr[q + 1]; ++j)
            EXPECT_FALSE(ids[q].eq(positives.indices[static_cast<std::size_t>(j)]).any().item<bool>()) << "query " << q;
        EXPECT_GT(shared(found), kind == "exact" ? 0.999 : 0.9);  // exact: up to ties at float precision
      }
    }
}

// Gradient caching encodes the labels twice, without graph and again for the gradient: both must draw the same
// dropout masks, which on a GPU come from the GPU's own generator.
TEST(GpuReplays, GradientCachingWithDropoutGivesPlainBackpropagationsGradients) {
  REQUIRE_CUDA();
  test::GradCacheCase problem(torch::kCUDA, /*dropout=*/0.5);
  const RandomState before = RandomState::of(torch::kCUDA);  // the cache replays the plain computation's draws
  const auto [plain, plain_grads] = problem.plain_backward();
  before.restore();
  const auto [value, embeddings] =
      grad_cached_backward(problem.model, problem.queries, problem.batch, problem.labels, problem.mask, problem.loss, test::GradCacheCase::kChunk);
  EXPECT_NEAR(value, plain, 1e-5);
  const std::vector<torch::Tensor> grads = problem.gradients();
  for (std::size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(torch::allclose(grads[i], plain_grads[i], 1e-4, 1e-5)) << "parameter " << i;
}

// A decoder whose layers are recomputed in backward must recompute them under the first forward's dropout masks:
// with LoRA dropout on a GPU, checkpointing on and off give the same gradients.
TEST(GpuReplays, CheckpointedDecoderLayersWithDropoutGiveTheSameGradients) {
  REQUIRE_CUDA();
  const DecoderConfig config = test::tiny_decoder_config();
  TokenizedCorpus corpus;
  for (const std::vector<std::int32_t>& ids : {std::vector<std::int32_t>{5, 9, 49}, {3, 4, 5, 6, 49}, {11, 49}}) corpus.append(ids);
  const std::vector<std::int64_t> rows{0, 1, 2};
  std::vector<std::vector<torch::Tensor>> grads;
  for (const bool checkpointing : {false, true}) {
    DecoderEncoderOptions options;
    options.device = torch::kCUDA;
    options.checkpointing = checkpointing;
    options.lora.spec = {.rank = 4, .alpha = 8, .rslora = true, .dropout = 0.3};
    options.lora.targets = {"q", "o", "up"};
    torch::manual_seed(5);
    DecoderEncoder model(config, options);
    {
      torch::NoGradGuard no_grad;  // every weight away from its start, so that every gradient is non-trivial
      for (auto& p : model->parameters()) p.copy_(0.2 * torch::randn(p.sizes()));
      for (auto& [name, tensor] : model->base_weights()) tensor->copy_(0.3 * torch::randn(tensor->sizes()));
    }
    model->train();
    torch::manual_seed(11);  // the same masks in both first forwards
    const torch::Tensor pooled = model->encode(corpus, rows);
    (pooled * torch::linspace(-1, 1, pooled.numel(), pooled.options()).view(pooled.sizes())).sum().backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : model->parameters()) {
      ASSERT_TRUE(p.grad().defined());
      g.push_back(p.grad().cpu().clone());
    }
    grads.push_back(std::move(g));
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  ASSERT_FALSE(grads[0].empty());
  for (std::size_t i = 0; i < grads[0].size(); ++i) EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-4, 1e-5)) << "parameter " << i;
}

// A run resumed on the GPU continues its dropout masks only when the checkpoint brings the GPU's own generator
// back: loading a checkpoint twice, with draws in between, must give the same next draws on the GPU.
TEST(GpuCheckpoints, LoadingACheckpointPutsTheGpusGeneratorBack) {
  REQUIRE_CUDA();
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 200, 30);
  TrainConfig config;
  config.dataset = dir / "data";
  config.device = "cuda";
  config.edit<EncoderOptions>().dim = 32;
  config.batch_size = 32;
  config.epochs = 1;
  config.eval_every = 0;
  config.threads = 1;
  TrainingRun run(config, dir / "runs.sqlite");
  run.run();
  const auto run_dir = TrainingRun::run_directory(dir / "runs.sqlite", run.run_id());
  std::unique_ptr<Method> method = make_method(component_config(config));
  method->build({}, run_dir);
  const std::int64_t num_labels = load_dataset(dir / "data").num_labels();
  const auto draws_after_load = [&] {
    load_checkpoint(run_dir / "checkpoint.pt", *method, num_labels);
    const torch::Tensor gpu = torch::rand({64}, torch::kCUDA).cpu();
    const torch::Tensor cpu = torch::rand({64});
    return std::make_pair(gpu, cpu);
  };
  const auto first = draws_after_load();
  (void)torch::rand({1000}, torch::kCUDA);  // the generators move on, as a run's steps would move them
  (void)torch::rand({1000});
  const auto second = draws_after_load();
  EXPECT_TRUE(torch::equal(first.first, second.first)) << "the GPU's generator was not put back";
  EXPECT_TRUE(torch::equal(first.second, second.second)) << "the CPU's generator was not put back";
}

}  // namespace
}  // namespace xmc
