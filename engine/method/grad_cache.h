#pragma once
// Engine-internal (includes torch). Gradient caching for "all labels" negatives: the loss of a batch
// against every label, with memory constant in the number of labels.
//   1. encode all labels chunk by chunk without a graph -> E;
//   2. encode the batch's queries with a graph, compute loss(q E^T) and back-propagate: the query side's
//      parameters get their gradients, and E gets ∂L/∂E (the cached gradient);
//   3. re-encode each label chunk with a graph (replaying the same dropout masks) and back-propagate
//      the cached gradient of that chunk.
// The parameter gradients equal those of plain back-propagation through the whole pool.
#include <torch/torch.h>

#include <functional>
#include <span>

#include "engine/loss/sharded_losses.h"
#include "engine/method/xmc_model.h"

namespace xmc {

using BatchLoss = std::function<torch::Tensor(const torch::Tensor& scores, const torch::Tensor& positive_mask)>;

/// Runs forward and backward (gradients accumulate in the model); returns the loss value and the
/// batch's query embeddings (detached).
std::pair<double, torch::Tensor> grad_cached_backward(XmcModel& model, const TokenizedCorpus& queries,
                                                      std::span<const std::int64_t> batch, const TokenizedCorpus& labels,
                                                      const torch::Tensor& positive_mask, const BatchLoss& loss,
                                                      std::int64_t label_chunk);

/// The loss of the whole batch given this rank's scores against its slice [label_begin, label_end) of the
/// labels, [B x (label_end - label_begin)]: this rank's part and the whole value (sharded_losses.h).
using ShardedBatchLoss = std::function<ShardedLoss(const torch::Tensor& scores, std::int64_t label_begin, std::int64_t label_end)>;

/// grad_cached_backward() split over the ranks of a data-parallel job: each rank encodes its shard of the
/// batch's queries (gathered, with gradient) and its slice of the labels, scores the whole batch against that
/// slice only, and back-propagates its part of the loss. Summed over the ranks, the parameter gradients are
/// those of one process over every label. Returns the whole loss and the whole batch's query embeddings.
std::pair<double, torch::Tensor> sharded_grad_cached_backward(XmcModel& model, const TokenizedCorpus& queries,
                                                              std::span<const std::int64_t> batch, const TokenizedCorpus& labels,
                                                              const ShardedBatchLoss& loss, std::int64_t label_chunk,
                                                              Communicator& communicator);

}  // namespace xmc
