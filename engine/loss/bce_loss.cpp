#include "engine/loss/loss_entry.h"

namespace xmc {

torch::Tensor bce_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask, const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "bce loss");
  if (s.numel() == 0) return loss_detail::zero_loss(s);
  const torch::Tensor targets = positive_mask.to(s.dtype());
  const torch::Tensor positive_weight = torch::full({1}, options.bce_positive_weight, s.options());
  return torch::binary_cross_entropy_with_logits(s, targets, /*weight=*/{}, positive_weight,
                                                 at::Reduction::Mean);
}

LossEntry bce_loss_entry() { return {.name = "bce", .compute = bce_loss}; }

}  // namespace xmc
