#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/loss/losses.h"

namespace xmc {

torch::Tensor compute_loss(LossKind kind, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                           const LossOptions& options) {
  switch (kind) {
    case LossKind::TripletOhnm: return triplet_ohnm_loss(scores, positive_mask, options);
    case LossKind::Softmax: return softmax_loss(scores, positive_mask, options);
    case LossKind::DecoupledSoftmax: return decoupled_softmax_loss(scores, positive_mask, options);
    case LossKind::SoftTopK: return soft_topk_loss(scores, positive_mask, options);
    case LossKind::SupCon: return supcon_loss(scores, positive_mask, options);
    case LossKind::Bce: return bce_loss(scores, positive_mask, options);
  }
  throw ConfigError("loss: invalid LossKind value " + std::to_string(static_cast<int>(kind)));
}

}  // namespace xmc
