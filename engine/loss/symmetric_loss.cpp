#include "engine/loss/losses.h"

namespace xmc {

torch::Tensor symmetric_loss(LossKind kind, const torch::Tensor& scores, const torch::Tensor& positive_mask, const LossOptions& options,
                             double query_to_label_weight) {
  const torch::Tensor query_to_label = compute_loss(kind, scores, positive_mask, options);
  if (query_to_label_weight >= 1.0) return query_to_label;
  const torch::Tensor label_to_query = compute_loss(kind, scores.t(), positive_mask.t(), options);
  return query_to_label_weight * query_to_label + (1.0 - query_to_label_weight) * label_to_query;
}

}  // namespace xmc
