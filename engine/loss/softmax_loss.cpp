#include "engine/loss/loss_entry.h"

namespace xmc {

torch::Tensor softmax_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                           const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "softmax loss");
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  if (pairs.count == 0) return loss_detail::zero_loss(s);
  const torch::Tensor logits = s / options.temperature;
  const torch::Tensor row_lse = logits.logsumexp(/*dim=*/1);  // log Σ_j e^{s_ij/τ} [B]
  // -log softmax at each positive pair: lse_i - s_ip/τ.
  const torch::Tensor nll = row_lse.index_select(/*dim=*/0, pairs.rows) - logits.index({pairs.rows, pairs.labels});
  return nll.sum() / static_cast<double>(pairs.count);
}

LossEntry softmax_loss_entry() { return {.name = "softmax", .compute = softmax_loss}; }

}  // namespace xmc
