#pragma once
// Engine-internal (includes torch). A registered loss: its config name and its functions. Each loss's file
// defines `LossEntry NAME_loss_entry()`; engine/registry/component_list.h lists them once (XMC_FOR_EACH_LOSS),
// and loss_entry(name) finds one, so a method holds a LossEntry and never names a loss.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "engine/loss/losses.h"
#include "engine/loss/sharded_losses.h"

namespace xmc {

struct LossEntry {
  std::string name;  ///< the config's `loss` value
  /// The loss of one batch (losses.h's conventions).
  torch::Tensor (*compute)(const torch::Tensor& scores, const torch::Tensor& positive_mask, const LossOptions& options) = nullptr;
  /// The same over score columns split across the ranks of a data-parallel job, without gathering them
  /// (sharded_losses.h); null: the caller gathers whole rows first.
  ShardedLoss (*sharded)(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                         const LossOptions& options) = nullptr;
  /// Both directions of UniDEC's symmetric loss in one pass, weighted w per query and 1 − w per label, given
  /// checked scores and the mask's positive pairs (at least one); null: each direction by `compute`.
  torch::Tensor (*both_directions)(const torch::Tensor& scores, const torch::Tensor& positive_mask, const loss_detail::PositivePairs& pairs,
                                   const LossOptions& options, double query_to_label_weight) = nullptr;
};

/// Every registered loss, in the order help texts list them (engine/registry/loss_entries.cpp).
const std::vector<LossEntry>& registered_losses();
/// The registered loss named `name`; throws ConfigError naming the valid names.
const LossEntry& loss_entry(const std::string& name);

/// `loss`'s value on one batch.
inline torch::Tensor compute_loss(const LossEntry& loss, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                  const LossOptions& options) {
  return loss.compute(scores, positive_mask, options);
}

/// UniDEC's symmetric loss: w·ℓ(S, M) + (1 − w)·ℓ(Sᵀ, Mᵀ) with ℓ = `loss` and w = query_to_label_weight —
/// queries ranking the pool's labels, and labels ranking the batch's queries (a label without a positive
/// query in the batch contributes nothing in that direction). w = 1 is the query→label direction alone.
torch::Tensor symmetric_loss(const LossEntry& loss, const torch::Tensor& scores, const torch::Tensor& positive_mask, const LossOptions& options,
                             double query_to_label_weight = 0.5);

/// The same, with the mask's true entries given as [N] int64 rows and columns, each entry once (a caller that
/// built the mask knows them): a loss computed both ways at once then skips the scan of the mask for them.
torch::Tensor symmetric_loss(const LossEntry& loss, const torch::Tensor& scores, const torch::Tensor& positive_mask, const torch::Tensor& pair_rows,
                             const torch::Tensor& pair_columns, const LossOptions& options, double query_to_label_weight = 0.5);

}  // namespace xmc
