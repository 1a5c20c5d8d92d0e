#include <algorithm>
#include <limits>

#include "engine/loss/loss_entry.h"

namespace xmc {

torch::Tensor triplet_ohnm_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "triplet loss");
  TORCH_CHECK(options.hardest_k > 0, "triplet loss: hardest_k must be positive, got ", options.hardest_k);
  const std::int64_t num_labels = s.size(1);
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  if (pairs.count == 0) return loss_detail::zero_loss(s);

  // The k hardest negatives of every row: positives masked to -inf so that topk never picks one. Slots past the
  // row's number of negatives are invalid (they would hold -inf picks, i.e. positives).
  const std::int64_t k = std::min(options.hardest_k, num_labels);
  const torch::Tensor hardest = std::get<1>(
      s.detach().masked_fill(positive_mask, -std::numeric_limits<double>::infinity()).topk(k, /*dim=*/1));
  const torch::Tensor negative_scores = s.gather(/*dim=*/1, hardest);  // [B x k], differentiable
  const torch::Tensor row_negatives = num_labels - positive_mask.sum(/*dim=*/1, /*keepdim=*/true);  // [B x 1]
  const torch::Tensor valid = torch::arange(k, row_negatives.options()).unsqueeze(0) < row_negatives;  // [B x k]

  // One row of k violations per positive pair: v_j = relu(s_ij - s_ip + γ) [N x k].
  const torch::Tensor pair_scores = s.index({pairs.rows, pairs.labels}).unsqueeze(1);  // [N x 1]
  const torch::Tensor pair_valid = valid.index_select(/*dim=*/0, pairs.rows);
  const torch::Tensor violations =
      torch::relu(negative_scores.index_select(/*dim=*/0, pairs.rows) - pair_scores + options.margin)
          .masked_fill(pair_valid.logical_not(), 0);

  torch::Tensor pair_losses;
  if (options.softmax_weighted_violators) {
    const torch::Tensor detached = violations.detach();
    const torch::Tensor violators = (detached > 0).logical_and(pair_valid);
    const torch::Tensor weights =
        torch::softmax((detached / options.temperature).masked_fill(violators.logical_not(),
                                                                    -std::numeric_limits<double>::infinity()),
                       /*dim=*/1)
            .masked_fill(violators.logical_not(), 0);  // a pair without violators gives NaNs here: zeroed
    pair_losses = (weights * violations).sum(/*dim=*/1);
  } else {
    const torch::Tensor count = pair_valid.sum(/*dim=*/1).clamp_min(1).to(s.dtype());
    pair_losses = violations.sum(/*dim=*/1) / count;
  }
  return pair_losses.sum() / static_cast<double>(pairs.count);
}

LossEntry triplet_loss_entry() { return {.name = "triplet", .compute = triplet_ohnm_loss}; }

}  // namespace xmc
