#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/loss/losses.h"

namespace xmc {

namespace {

constexpr int kMaxSolverSteps = 60;
constexpr double kTopKMargin = 1e-3;  // k is clamped to [kTopKMargin, P - kTopKMargin]

/// u_i = α t_i with f_i(u) = Σ_j σ(z_ij + u) - k = 0, z = α s/τ, all in float64 and without graph. f_i is
/// increasing; the root is bracketed by [logit(k/P) - max_j z_ij, logit(k/P) - min_j z_ij] (there every
/// σ(z_ij + u) is <= resp. >= k/P). Bisection, accelerated by a Newton step whenever that step stays inside the
/// row's bracket (so convergence is guaranteed and usually takes ~10 steps instead of ~55).
torch::Tensor solve_threshold(const torch::Tensor& z, double k) {
  const double base = std::log(k / static_cast<double>(z.size(1))) - std::log1p(-k / static_cast<double>(z.size(1)));
  torch::Tensor lo = base - std::get<0>(z.max(/*dim=*/1, /*keepdim=*/true));  // [B x 1]
  torch::Tensor hi = base - std::get<0>(z.min(/*dim=*/1, /*keepdim=*/true));
  torch::Tensor u = (lo + hi) * 0.5;
  torch::Tensor work = torch::empty_like(z);
  const double tolerance = 1e-14 * std::max(1.0, k);
  for (int step = 0; step < kMaxSolverSteps; ++step) {
    torch::add_out(work, z, u).sigmoid_();
    const torch::Tensor f = work.sum(/*dim=*/1, /*keepdim=*/true) - k;
    const torch::Tensor converged = f.abs() <= tolerance;
    if (converged.all().item<bool>()) break;
    const torch::Tensor too_high = f > 0;
    hi = torch::where(too_high, u, hi);
    lo = torch::where(too_high, lo, u);
    const torch::Tensor slope = work.addcmul_(work, work, /*value=*/-1).sum(/*dim=*/1, /*keepdim=*/true);  // f'
    const torch::Tensor newton = u - f / slope;
    const torch::Tensor inside = (newton > lo).logical_and(newton < hi);  // false for NaN (slope 0)
    const torch::Tensor next = torch::where(converged, u, torch::where(inside, newton, (lo + hi) * 0.5));
    // Stop once no row moves by more than rounding: u is as exact as float64 sums allow.
    const double change = (next - u).abs().max().item<double>();
    u = next;
    if (change <= 4 * std::numeric_limits<double>::epsilon() * std::max(1.0, u.abs().max().item<double>())) break;
  }
  return u;
}

/// t_i with Σ_j σ(α(s_ij/τ + t_i)) = k. Forward: the solver above, without graph. Backward: the implicit-function
/// gradient ∂t_i/∂s_im = -σ'_im / (τ Σ_j σ'_ij), σ' evaluated at α(s/τ + t).
struct SoftTopKThreshold : public torch::autograd::Function<SoftTopKThreshold> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               double temperature, double alpha, double k) {
    const torch::NoGradGuard no_grad;
    const auto num_labels = static_cast<double>(scores.size(1));
    const double clamped_k = std::clamp(k, kTopKMargin, num_labels - kTopKMargin);
    const torch::Tensor u = solve_threshold(scores.to(torch::kDouble) * (alpha / temperature), clamped_k);
    ctx->save_for_backward({scores, u});
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["alpha"] = alpha;
    return (u.squeeze(1) / alpha).to(scores.scalar_type());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& scores = saved[0];
    const torch::Tensor& u = saved[1];
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const double alpha = ctx->saved_data["alpha"].toDouble();
    torch::Tensor slope = scores.to(torch::kDouble).mul_(alpha / temperature).add_(u).sigmoid_();
    slope.addcmul_(slope, slope, /*value=*/-1);  // σ' = σ(1 - σ) [B x P]
    const torch::Tensor total = slope.sum(/*dim=*/1, /*keepdim=*/true).clamp_min(1e-300);
    const torch::Tensor grad_t = grad_outputs[0].to(torch::kDouble).unsqueeze(1);  // [B x 1]
    slope.mul_(grad_t / (-temperature * total));
    return {slope.to(scores.scalar_type()), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor soft_topk_threshold(const torch::Tensor& scores, const LossOptions& options) {
  TORCH_CHECK(scores.dim() == 2 && scores.is_floating_point(), "soft top-k: scores must be a floating [B x P] tensor");
  TORCH_CHECK(options.temperature > 0 && options.topk_alpha > 0,
              "soft top-k: temperature and topk_alpha must be positive");
  if (scores.size(1) == 0) return scores.sum(/*dim=*/1);  // no labels: no threshold to find
  return SoftTopKThreshold::apply(scores, options.temperature, options.topk_alpha, options.topk_k);
}

torch::Tensor soft_topk_probabilities(const torch::Tensor& scores, const LossOptions& options) {
  const torch::Tensor t = soft_topk_threshold(scores, options);
  return torch::sigmoid(options.topk_alpha * (scores / options.temperature + t.unsqueeze(1)));
}

torch::Tensor soft_topk_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                             const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "soft top-k loss");
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  if (pairs.count == 0) return loss_detail::zero_loss(s);
  const torch::Tensor row_positives = positive_mask.sum(/*dim=*/1);  // |P_i| [B]
  const torch::Tensor num_rows = (row_positives > 0).sum().to(s.dtype());
  const torch::Tensor t = soft_topk_threshold(s, options);
  // -log σ(α(s_ip/τ + t_i)) at each positive pair, weighted 1/|P_i|, then the mean over rows with positives.
  const torch::Tensor x =
      options.topk_alpha * (s.index({pairs.rows, pairs.labels}) / options.temperature + t.index_select(0, pairs.rows));
  const torch::Tensor pair_weights = 1.0 / row_positives.index_select(/*dim=*/0, pairs.rows).to(s.dtype());
  return -(torch::log_sigmoid(x) * pair_weights).sum() / num_rows;
}

}  // namespace xmc
