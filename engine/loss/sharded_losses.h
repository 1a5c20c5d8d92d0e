#pragma once
// Engine-internal (includes torch). DEXML's all-label losses with the label pool sharded across the ranks of
// a data-parallel job: rank r holds the scores of every query of the (gathered) batch against its own slice of
// the labels, [B x P_r], and the positive mask of that slice. Softmax denominators (log-sum-exp) and the
// SoftTop-k threshold's sums are all-reduced, so no rank ever holds the [B x P] matrix, and the result equals
// the single-process loss over the concatenated pool (losses.h), value and gradient.
//
// Each function returns the rank's part of the loss: the parts add up over the ranks to the loss, and their
// backward() — run on every rank, since backward all-reduces too — gives each rank the exact gradient of the
// whole loss with respect to its own scores.
#include <torch/torch.h>

#include "engine/loss/loss_options.h"

namespace xmc {

class Communicator;

struct ShardedLoss {
  torch::Tensor part;  ///< this rank's differentiable part
  double value = 0;    ///< the whole loss (the parts' sum), the same on every rank
};

/// decoupled_softmax_loss() over the concatenation of the ranks' shards.
ShardedLoss sharded_decoupled_softmax_loss(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                           const LossOptions& options);

/// soft_topk_threshold() over the concatenation of the ranks' shards: the same t [B] on every rank.
/// Differentiable: its backward sums the incoming gradients over the ranks.
torch::Tensor sharded_soft_topk_threshold(Communicator& communicator, const torch::Tensor& scores, const LossOptions& options);

/// soft_topk_loss() over the concatenation of the ranks' shards.
ShardedLoss sharded_soft_topk_loss(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                   const LossOptions& options);

}  // namespace xmc
