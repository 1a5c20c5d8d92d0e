#include <limits>

#include "engine/loss/losses.h"

namespace xmc {

torch::Tensor decoupled_softmax_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                     const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "decoupled softmax loss");
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  if (pairs.count == 0) return loss_detail::zero_loss(s);
  const torch::Tensor logits = s / options.temperature;
  // log Σ_{j∉P_i} e^{s_ij/τ} [B]: the positives masked to -inf. A row of positives only gives -inf (its NaN
  // gradient entries sit exactly at the masked positions, where masked_fill's backward zeroes them).
  const torch::Tensor negatives_lse =
      logits.masked_fill(positive_mask, -std::numeric_limits<double>::infinity()).logsumexp(/*dim=*/1);
  // Each positive against the negatives alone: log(e^{s_ip/τ} + Σ_neg) - s_ip/τ.
  const torch::Tensor positive_logits = logits.index({pairs.rows, pairs.labels});
  const torch::Tensor nll =
      torch::logaddexp(positive_logits, negatives_lse.index_select(/*dim=*/0, pairs.rows)) - positive_logits;
  return nll.sum() / static_cast<double>(pairs.count);
}

}  // namespace xmc
