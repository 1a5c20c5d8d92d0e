// The CUDA path, on a machine with a GPU (every test skips itself without one): exact search on the GPU
// returns the CPU's top-k, balanced clustering on the GPU gives clusters of the allowed sizes covering every
// row, and the bert forward under bf16 autocast on the GPU stays close to fp32 with fp32 weights and gradients.
#include <gtest/gtest.h>

#include <set>

#include "engine/index/exact_search.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/sampler/balanced_clustering.h"

namespace xmc {
namespace {

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine"

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

}  // namespace
}  // namespace xmc
