#include "engine/method/grad_cache.h"

#include "engine/distributed/communicator.h"
#include "engine/model/random_state.h"

namespace xmc {
namespace {

/// Steps 1 and 3 of gradient caching over label rows [begin, end), chunk by chunk: encoded without graph,
/// remembering the random state before each chunk, then re-encoded with graph under those states (so dropout
/// replays, on a GPU too) to push the cached gradient through.
class LabelChunks {
 public:
  LabelChunks(std::int64_t begin, std::int64_t end, std::int64_t chunk) : begin_(begin), end_(end), chunk_(chunk) {}

  /// The chunks' embeddings without graph, in row order (empty: no rows).
  std::vector<torch::Tensor> encode_without_graph(XmcModel& model, const TokenizedCorpus& labels) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> parts;
    for (std::int64_t start = begin_; start < end_; start += chunk_) {
      rng_states_.push_back(RandomState::of(model->device()));
      parts.push_back(model->embed(labels, rows(start)));
    }
    return parts;
  }

  /// `cached` = ∂L/∂(the embeddings of rows [begin, end)), pushed through the re-encoded chunks.
  void backward(XmcModel& model, const TokenizedCorpus& labels, const torch::Tensor& cached) const {
    std::size_t chunk = 0;
    for (std::int64_t start = begin_; start < end_; start += chunk_, ++chunk) {
      const std::vector<std::int64_t> chunk_rows = rows(start);
      rng_states_[chunk].restore();
      model->embed(labels, chunk_rows).backward(cached.narrow(0, start - begin_, static_cast<std::int64_t>(chunk_rows.size())));
    }
  }

 private:
  std::vector<std::int64_t> rows(std::int64_t start) const {
    std::vector<std::int64_t> r;
    for (std::int64_t row = start; row < std::min(end_, start + chunk_); ++row) r.push_back(row);
    return r;
  }

  std::int64_t begin_, end_, chunk_;
  std::vector<RandomState> rng_states_;
};

}  // namespace

std::pair<double, torch::Tensor> grad_cached_backward(XmcModel& model, const TokenizedCorpus& queries,
                                                      std::span<const std::int64_t> batch, const TokenizedCorpus& labels,
                                                      const torch::Tensor& positive_mask, const BatchLoss& loss,
                                                      std::int64_t label_chunk) {
  LabelChunks chunks(0, labels.size(), label_chunk);
  // 1. Label embeddings without graph.
  torch::Tensor label_embeddings = torch::cat(chunks.encode_without_graph(model, labels)).requires_grad_(true);
  // 2. Queries with graph; loss against every label.
  torch::Tensor q = model->embed(queries, batch);
  torch::Tensor value = loss(torch::matmul(q, label_embeddings.t()), positive_mask.to(q.device()));
  value.backward();
  const RandomState rng_after_queries = RandomState::of(model->device());
  // 3. The cached gradient through each re-encoded chunk.
  chunks.backward(model, labels, label_embeddings.grad());
  // Leave the generators where a plain forward of labels-then-queries would have left them.
  rng_after_queries.restore();
  return {value.item<double>(), q.detach()};
}

std::pair<double, torch::Tensor> sharded_grad_cached_backward(XmcModel& model, const TokenizedCorpus& queries,
                                                              std::span<const std::int64_t> batch, const TokenizedCorpus& labels,
                                                              const ShardedBatchLoss& loss, std::int64_t label_chunk,
                                                              Communicator& communicator) {
  const auto [label_begin, label_end] = shard_range(labels.size(), communicator.rank(), communicator.world_size());
  LabelChunks chunks(label_begin, label_end, label_chunk);
  // 1. This rank's labels without graph.
  const std::vector<torch::Tensor> parts = chunks.encode_without_graph(model, labels);
  // 2. This rank's queries with graph, gathered; the whole batch against this rank's labels.
  const torch::Tensor q =
      all_gather_rows_with_grad(communicator, model->embed(queries, own_shard(batch, communicator)), static_cast<std::int64_t>(batch.size()));
  torch::Tensor label_embeddings =
      (parts.empty() ? torch::zeros({0, q.size(1)}, q.options()) : torch::cat(parts)).detach().requires_grad_(true);
  const ShardedLoss value = loss(torch::matmul(q, label_embeddings.t()), label_begin, label_end);
  value.part.backward();
  const RandomState rng_after_queries = RandomState::of(model->device());
  // 3. The cached gradient through each re-encoded chunk of this rank's labels.
  chunks.backward(model, labels, label_embeddings.grad());
  rng_after_queries.restore();
  return {value.value, q.detach()};
}

}  // namespace xmc
