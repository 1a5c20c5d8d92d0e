#include "engine/optim/gradient_clipping.h"

#include "engine/optim/sparse_gradient.h"

namespace xmc {

torch::Tensor clip_gradient_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  std::vector<torch::Tensor> norms;
  for (const auto& p : parameters) {
    torch::Tensor grad = p.grad();
    if (!grad.defined()) continue;
    if (grad.is_sparse()) {
      p.mutable_grad() = grad = coalesced(grad);  // the same tensor when it already is
      norms.push_back(grad._values().norm());
    } else {
      norms.push_back(grad.norm());
    }
    grads.push_back(grad);
  }
  if (grads.empty()) return torch::zeros({}, torch::kFloat64);
  const torch::Tensor total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm();
  const torch::Tensor coefficient = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
  // Scaling by 1 changes no bit. On the CPU the passes over the gradients are skipped then (a NaN norm scales them,
  // as LibTorch's); on a GPU they are always taken, since asking would make the host wait for the device every step.
  if (!grads.front().device().is_cpu() || !(coefficient.item<double>() >= 1.0))
    for (auto& grad : grads) {
      if (grad.is_sparse())
        grad._values().mul_(coefficient);
      else
        grad.mul_(coefficient);
    }
  return total;
}

}  // namespace xmc
