#include "engine/train/grad_cache.h"

#include <ATen/CPUGeneratorImpl.h>

namespace xmc {

std::pair<double, torch::Tensor> grad_cached_backward(XmcModel& model, const TokenizedCorpus& queries,
                                                      std::span<const std::int64_t> batch, const TokenizedCorpus& labels,
                                                      const torch::Tensor& positive_mask, const BatchLoss& loss,
                                                      std::int64_t label_chunk) {
  const std::int64_t num_labels = labels.size();
  auto generator = at::detail::getDefaultCPUGenerator();
  std::vector<torch::Tensor> rng_states;
  std::vector<torch::Tensor> parts;
  std::vector<std::int64_t> rows;
  auto chunk_rows = [&](std::int64_t start) {
    rows.clear();
    for (std::int64_t r = start; r < std::min(num_labels, start + label_chunk); ++r) rows.push_back(r);
  };
  {
    // 1. Label embeddings without graph, remembering the RNG so dropout can be replayed.
    torch::NoGradGuard no_grad;
    for (std::int64_t start = 0; start < num_labels; start += label_chunk) {
      chunk_rows(start);
      rng_states.push_back(generator.get_state());
      parts.push_back(model->embed(labels, rows));
    }
  }
  torch::Tensor label_embeddings = torch::cat(parts).requires_grad_(true);

  // 2. Queries with graph; loss against every label.
  torch::Tensor q = model->embed(queries, batch);
  torch::Tensor value = loss(torch::matmul(q, label_embeddings.t()), positive_mask.to(q.device()));
  value.backward();
  torch::Tensor cached = label_embeddings.grad();
  const torch::Tensor rng_after_queries = generator.get_state();

  // 3. Re-encode each chunk with graph under the same RNG state and push the cached gradient through it.
  std::size_t chunk = 0;
  for (std::int64_t start = 0; start < num_labels; start += label_chunk, ++chunk) {
    chunk_rows(start);
    generator.set_state(rng_states[chunk]);
    torch::Tensor e = model->embed(labels, rows);
    e.backward(cached.narrow(0, start, static_cast<std::int64_t>(rows.size())));
  }
  // Leave the RNG where a plain forward of labels-then-queries would have left it.
  generator.set_state(rng_after_queries);
  return {value.item<double>(), q.detach()};
}

}  // namespace xmc
