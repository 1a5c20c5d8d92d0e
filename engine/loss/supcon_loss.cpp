#include "engine/loss/loss_entry.h"

namespace xmc {

torch::Tensor supcon_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                          const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "supcon loss");
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  if (pairs.count == 0) return loss_detail::zero_loss(s);
  const torch::Tensor row_positives = positive_mask.sum(/*dim=*/1);  // |P_i| [B]
  const torch::Tensor num_anchors = (row_positives > 0).sum().to(s.dtype());
  const torch::Tensor logits = s / options.temperature;
  const torch::Tensor row_lse = logits.logsumexp(/*dim=*/1);  // [B]
  const torch::Tensor nll = row_lse.index_select(/*dim=*/0, pairs.rows) - logits.index({pairs.rows, pairs.labels});
  // Mean over each anchor's positives, then over the anchors that have positives.
  const torch::Tensor pair_weights = 1.0 / row_positives.index_select(/*dim=*/0, pairs.rows).to(s.dtype());
  return (nll * pair_weights).sum() / num_anchors;
}

LossEntry supcon_loss_entry() {
  return {.name = "supcon",
          .compute = supcon_loss,
          .both_directions = [](const torch::Tensor& scores, const torch::Tensor& /*positive_mask*/, const loss_detail::PositivePairs& pairs,
                                const LossOptions& options, double query_to_label_weight) {
            return loss_detail::supcon_at_once(scores, pairs, options.temperature, query_to_label_weight);
          }};
}

}  // namespace xmc
