#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/distributed/communicator.h"
#include "engine/loss/loss_entry.h"
#include "engine/loss/sharded_losses.h"

namespace xmc {

namespace {

constexpr int kMaxSolverSteps = 60;
constexpr double kTopKMargin = 1e-3;  // k is clamped to [kTopKMargin, P - kTopKMargin]

/// Row-wise sums and maxima over the label pool: of this process's scores alone, or all-reduced over the ranks
/// that each hold a slice of the pool (sharded_losses.h).
struct PoolReduction {
  Communicator* communicator = nullptr;  ///< null: the pool is all here
  void sum(torch::Tensor& t) const {
    if (communicator != nullptr) communicator->all_reduce_sum(t, "summing SoftTop-k terms");
  }
  void max(torch::Tensor& t) const {
    if (communicator != nullptr) communicator->all_reduce_max(t, "finding SoftTop-k brackets");
  }
};

/// u_i = α t_i with f_i(u) = Σ_j σ(z_ij + u) - k = 0, z = α s/τ, all in float64 and without graph. f_i is
/// increasing; the root is bracketed by [logit(k/P) - max_j z_ij, logit(k/P) - min_j z_ij] (there every
/// σ(z_ij + u) is <= resp. >= k/P). Bisection, accelerated by a Newton step whenever that step stays inside the
/// row's bracket (so convergence is guaranteed and usually takes ~10 steps instead of ~55). With the pool
/// sharded, the sums, maxima and minima are all-reduced, so every rank takes the same steps.
torch::Tensor solve_threshold(const torch::Tensor& z, double k, double num_labels, const PoolReduction& pool) {
  const double base = std::log(k / num_labels) - std::log1p(-k / num_labels);
  torch::Tensor z_max = z.size(1) > 0 ? std::get<0>(z.max(/*dim=*/1, /*keepdim=*/true))
                                      : torch::full({z.size(0), 1}, -std::numeric_limits<double>::infinity(), z.options());
  torch::Tensor z_neg_min = z.size(1) > 0 ? -std::get<0>(z.min(/*dim=*/1, /*keepdim=*/true)) : z_max.clone();
  pool.max(z_max);
  pool.max(z_neg_min);
  torch::Tensor lo = base - z_max;  // [B x 1]
  torch::Tensor hi = base + z_neg_min;
  torch::Tensor u = (lo + hi) * 0.5;
  torch::Tensor work = torch::empty_like(z);
  const double tolerance = 1e-14 * std::max(1.0, k);
  for (int step = 0; step < kMaxSolverSteps; ++step) {
    torch::add_out(work, z, u).sigmoid_();
    // f + k and f' side by side: one reduction per step.
    torch::Tensor sums = torch::cat({work.sum(/*dim=*/1, /*keepdim=*/true),
                                     (work - work * work).sum(/*dim=*/1, /*keepdim=*/true)}, /*dim=*/1);
    pool.sum(sums);
    const torch::Tensor f = sums.narrow(1, 0, 1) - k;
    const torch::Tensor slope = sums.narrow(1, 1, 1);
    const torch::Tensor converged = f.abs() <= tolerance;
    if (converged.all().item<bool>()) break;
    const torch::Tensor too_high = f > 0;
    hi = torch::where(too_high, u, hi);
    lo = torch::where(too_high, lo, u);
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
/// gradient ∂t_i/∂s_im = -σ'_im / (τ Σ_j σ'_ij), σ' evaluated at α(s/τ + t). With the pool sharded, Σ_j σ'_ij and
/// the incoming gradient (each rank's part of the loss uses t) are summed over the ranks.
struct SoftTopKThreshold : public torch::autograd::Function<SoftTopKThreshold> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               double temperature, double alpha, double k, std::int64_t communicator_address) {
    const torch::NoGradGuard no_grad;
    const PoolReduction pool{reinterpret_cast<Communicator*>(communicator_address)};
    torch::Tensor columns = torch::tensor({static_cast<double>(scores.size(1))}, torch::kDouble);
    pool.sum(columns);
    const double num_labels = columns.item<double>();
    const double clamped_k = std::clamp(k, kTopKMargin, num_labels - kTopKMargin);
    const torch::Tensor u = solve_threshold(scores.to(torch::kDouble) * (alpha / temperature), clamped_k, num_labels, pool);
    ctx->save_for_backward({scores, u});
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["communicator"] = communicator_address;
    return (u.squeeze(1) / alpha).to(scores.scalar_type());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& scores = saved[0];
    const torch::Tensor& u = saved[1];
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const double alpha = ctx->saved_data["alpha"].toDouble();
    const PoolReduction pool{reinterpret_cast<Communicator*>(ctx->saved_data["communicator"].toInt())};
    torch::Tensor slope = scores.to(torch::kDouble).mul_(alpha / temperature).add_(u).sigmoid_();
    slope.addcmul_(slope, slope, /*value=*/-1);  // σ' = σ(1 - σ) [B x P]
    torch::Tensor total_and_grad = torch::cat({slope.sum(/*dim=*/1, /*keepdim=*/true),
                                               grad_outputs[0].to(torch::kDouble).reshape({-1, 1})}, /*dim=*/1);
    pool.sum(total_and_grad);
    const torch::Tensor total = total_and_grad.narrow(1, 0, 1).clamp_min(1e-300);
    const torch::Tensor grad_t = total_and_grad.narrow(1, 1, 1);  // [B x 1]
    slope.mul_(grad_t / (-temperature * total));
    return {slope.to(scores.scalar_type()), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor soft_topk_threshold(const torch::Tensor& scores, const LossOptions& options) {
  TORCH_CHECK(scores.dim() == 2 && scores.is_floating_point(), "soft top-k: scores must be a floating [B x P] tensor");
  TORCH_CHECK(options.temperature > 0 && options.topk_alpha > 0,
              "soft top-k: temperature and topk_alpha must be positive");
  if (scores.size(1) == 0) return scores.sum(/*dim=*/1);  // no labels: no threshold to find
  return SoftTopKThreshold::apply(scores, options.temperature, options.topk_alpha, options.topk_k, std::int64_t{0});
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

torch::Tensor sharded_soft_topk_threshold(Communicator& communicator, const torch::Tensor& scores, const LossOptions& options) {
  TORCH_CHECK(scores.dim() == 2 && scores.is_floating_point(), "sharded soft top-k: scores must be a floating [B x P_r] tensor");
  TORCH_CHECK(options.temperature > 0 && options.topk_alpha > 0, "sharded soft top-k: temperature and topk_alpha must be positive");
  return SoftTopKThreshold::apply(scores, options.temperature, options.topk_alpha, options.topk_k,
                                  reinterpret_cast<std::int64_t>(&communicator));
}

ShardedLoss sharded_soft_topk_loss(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                   const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "sharded soft top-k loss");
  // |P_i| over the whole pool, and the rows that have positives anywhere.
  torch::Tensor row_positives = positive_mask.sum(/*dim=*/1).to(torch::kDouble);
  communicator.all_reduce_sum(row_positives, "counting positives");
  row_positives = row_positives.to(s.device());
  const double num_rows = (row_positives > 0).sum().item<double>();
  const torch::Tensor t = sharded_soft_topk_threshold(communicator, s, options);
  // Every rank's part uses t, so every rank runs t's backward (which all-reduces) even without positives here.
  torch::Tensor part = t.sum() * 0;
  if (num_rows > 0) {
    const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
    if (pairs.count > 0) {
      const torch::Tensor x =
          options.topk_alpha * (s.index({pairs.rows, pairs.labels}) / options.temperature + t.index_select(0, pairs.rows));
      const torch::Tensor pair_weights = 1.0 / row_positives.index_select(/*dim=*/0, pairs.rows).to(s.dtype());
      part = part - (torch::log_sigmoid(x) * pair_weights).sum() / num_rows;
    }
  }
  torch::Tensor value = part.detach().to(torch::kDouble).reshape({1}).cpu().clone();
  communicator.all_reduce_sum(value, "summing the loss");
  return {part, value.item<double>()};
}

LossEntry softtopk_loss_entry() { return {.name = "softtopk", .compute = soft_topk_loss, .sharded = sharded_soft_topk_loss}; }

}  // namespace xmc
