#include "engine/optim/sparse_gradient.h"

namespace xmc {

torch::Tensor coalesced(const torch::Tensor& grad) {
  if (grad.is_coalesced()) return grad;
  const torch::Tensor rows = grad._indices();
  if (grad.sparse_dim() == 1 && rows.device().is_cpu()) {
    const torch::Tensor flat = rows.reshape({-1});
    const bool ascending = flat.numel() < 2 || (flat.slice(0, 1) > flat.slice(0, 0, -1)).all().item<bool>();
    if (ascending) {
      torch::Tensor marked = grad;
      marked._coalesced_(true);
      return marked;
    }
  }
  return grad.coalesce();
}

}  // namespace xmc
