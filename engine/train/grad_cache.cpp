#include "engine/train/grad_cache.h"

#include <ATen/CPUGeneratorImpl.h>

#include "engine/distributed/communicator.h"

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

std::pair<double, torch::Tensor> sharded_grad_cached_backward(XmcModel& model, const TokenizedCorpus& queries,
                                                              std::span<const std::int64_t> batch, const TokenizedCorpus& labels,
                                                              const ShardedBatchLoss& loss, std::int64_t label_chunk,
                                                              Communicator& communicator) {
  const auto [label_begin, label_end] = shard_range(labels.size(), communicator.rank(), communicator.world_size());
  const auto [query_begin, query_end] = shard_range(static_cast<std::int64_t>(batch.size()), communicator.rank(), communicator.world_size());
  auto generator = at::detail::getDefaultCPUGenerator();
  std::vector<torch::Tensor> rng_states;
  std::vector<torch::Tensor> parts;
  auto chunk_rows = [&](std::int64_t start) {
    std::vector<std::int64_t> rows;
    for (std::int64_t r = start; r < std::min(label_end, start + label_chunk); ++r) rows.push_back(r);
    return rows;
  };
  {
    // 1. This rank's labels without graph, remembering the RNG so dropout can be replayed.
    torch::NoGradGuard no_grad;
    for (std::int64_t start = label_begin; start < label_end; start += label_chunk) {
      rng_states.push_back(generator.get_state());
      parts.push_back(model->embed(labels, chunk_rows(start)));
    }
  }
  // 2. This rank's queries with graph, gathered; the whole batch against this rank's labels.
  const torch::Tensor q_local =
      model->embed(queries, batch.subspan(static_cast<std::size_t>(query_begin), static_cast<std::size_t>(query_end - query_begin)));
  const torch::Tensor q = all_gather_rows_with_grad(communicator, q_local, static_cast<std::int64_t>(batch.size()));
  torch::Tensor label_embeddings =
      (parts.empty() ? torch::zeros({0, q.size(1)}, q.options()) : torch::cat(parts)).detach().requires_grad_(true);
  const ShardedLoss value = loss(torch::matmul(q, label_embeddings.t()), label_begin, label_end);
  value.part.backward();
  const torch::Tensor cached = label_embeddings.grad();
  const torch::Tensor rng_after_queries = generator.get_state();

  // 3. Re-encode each chunk with graph under the same RNG state and push the cached gradient through it.
  std::size_t chunk = 0;
  for (std::int64_t start = label_begin; start < label_end; start += label_chunk, ++chunk) {
    const std::vector<std::int64_t> rows = chunk_rows(start);
    generator.set_state(rng_states[chunk]);
    torch::Tensor e = model->embed(labels, rows);
    e.backward(cached.narrow(0, start - label_begin, static_cast<std::int64_t>(rows.size())));
  }
  generator.set_state(rng_after_queries);
  return {value.value, q.detach()};
}

}  // namespace xmc
