#include <limits>

#include "engine/distributed/communicator.h"
#include "engine/loss/loss_entry.h"
#include "engine/loss/sharded_losses.h"

namespace xmc {

torch::Tensor decoupled_softmax_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                     const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "decoupled softmax loss");
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  if (pairs.count == 0) return loss_detail::zero_loss(s);
  // Each positive against the negatives alone, log(e^{s_ip/τ} + Σ_{j∉P_i} e^{s_ij/τ}) - s_ip/τ, averaged over the
  // pairs: UniDEC's two-direction form with the label direction's weight 0 (one pass each way, by hand; a row
  // of positives only has no negatives and costs nothing).
  return loss_detail::decoupled_softmax_at_once(s, positive_mask, pairs, options.temperature, /*query_to_label_weight=*/1.0);
}

namespace {

/// G_i = log Σ_r e^{lse_ri} over the ranks, from each rank's local log-sum-exp lse_r [B] (-inf where a rank has
/// no negatives in a row). Backward: ∂G_i/∂lse_ri = e^{lse_ri - G_i}, times the incoming gradient summed over the
/// ranks (every rank's part of the loss uses G).
struct GlobalLogSumExp : public torch::autograd::Function<GlobalLogSumExp> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& local, std::int64_t communicator_address) {
    auto* communicator = reinterpret_cast<Communicator*>(communicator_address);
    torch::Tensor peak = local.detach().to(torch::kDouble).cpu().clone();
    communicator->all_reduce_max(peak, "reducing softmax denominators");
    const torch::Tensor finite_peak = torch::where(torch::isfinite(peak), peak, torch::zeros_like(peak));
    torch::Tensor sum = (local.detach().to(torch::kDouble).cpu() - finite_peak).exp();
    communicator->all_reduce_sum(sum, "reducing softmax denominators");
    const torch::Tensor global = (sum.log() + finite_peak).to(local.device()).to(local.scalar_type());
    ctx->save_for_backward({local, global});
    ctx->saved_data["communicator"] = communicator_address;
    return global;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    auto* communicator = reinterpret_cast<Communicator*>(ctx->saved_data["communicator"].toInt());
    const auto saved = ctx->get_saved_variables();
    torch::Tensor grad = grad_outputs[0].contiguous().clone();
    communicator->all_reduce_sum(grad, "reducing softmax denominator gradients");
    torch::Tensor weight = (saved[0] - saved[1]).exp();
    weight = torch::where(torch::isfinite(weight), weight, torch::zeros_like(weight));  // -inf - -inf: no negatives at all
    return {grad * weight, torch::Tensor()};
  }
};

}  // namespace

ShardedLoss sharded_decoupled_softmax_loss(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                           const LossOptions& options) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "sharded decoupled softmax loss");
  const loss_detail::PositivePairs pairs = loss_detail::positive_pairs(positive_mask);
  torch::Tensor count = torch::tensor({static_cast<double>(pairs.count)}, torch::kDouble);
  communicator.all_reduce_sum(count, "counting positives");
  const double total_pairs = count.item<double>();
  const torch::Tensor logits = s / options.temperature;
  const torch::Tensor local_lse =
      logits.masked_fill(positive_mask, -std::numeric_limits<double>::infinity()).logsumexp(/*dim=*/1);
  const torch::Tensor negatives_lse = GlobalLogSumExp::apply(local_lse, reinterpret_cast<std::int64_t>(&communicator));
  // Every rank's part uses G, so every rank runs its backward (which all-reduces) even without positives here.
  torch::Tensor part = torch::where(torch::isfinite(negatives_lse), negatives_lse, torch::zeros_like(negatives_lse)).sum() * 0;
  if (pairs.count > 0 && total_pairs > 0) {
    const torch::Tensor positive_logits = logits.index({pairs.rows, pairs.labels});
    const torch::Tensor nll =
        torch::logaddexp(positive_logits, negatives_lse.index_select(/*dim=*/0, pairs.rows)) - positive_logits;
    part = part + nll.sum() / total_pairs;
  }
  torch::Tensor value = part.detach().to(torch::kDouble).reshape({1}).cpu().clone();
  communicator.all_reduce_sum(value, "summing the loss");
  return {part, value.item<double>()};
}

LossEntry decoupled_softmax_loss_entry() {
  return {.name = "decoupled_softmax",
          .compute = decoupled_softmax_loss,
          .sharded = sharded_decoupled_softmax_loss,
          .both_directions = [](const torch::Tensor& scores, const torch::Tensor& positive_mask, const loss_detail::PositivePairs& pairs,
                                const LossOptions& options, double query_to_label_weight) {
            return loss_detail::decoupled_softmax_at_once(scores, positive_mask, pairs, options.temperature, query_to_label_weight);
          }};
}

}  // namespace xmc
