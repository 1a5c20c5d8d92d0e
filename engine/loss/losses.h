#pragma once
// Engine-internal (includes torch). The training losses (DESIGN.md sections 2-3).
//
// Conventions, stated once for every function here:
//   scores         [B x P] floating tensor: s_ij = score of query i against label j of the batch's label pool
//                  (bf16/half are computed in float32); finite values.
//   positive_mask  [B x P] bool tensor, same device: mask[i][j] = label j is a positive of query i
//                  (P_i = {j : mask[i][j]}).
//   result         a scalar tensor, differentiable w.r.t. scores. Rows without positives contribute nothing;
//                  a batch without any positive pair gives 0 (still connected to scores, so backward() works).
//                  BCE is the one exception: every entry counts (see bce_loss).
//   Work is O(B x P) memory, batched through torch ops (no per-element C++ loops) and device-generic; per-pair
//   terms are evaluated only at the positive pairs, which costs one host-device sync (mask.nonzero()).
#include <cstdint>
#include <string>
#include <string_view>

#include <torch/torch.h>

#include "engine/loss/loss_options.h"

namespace xmc {

// loss_entry.h registers these by name (LossEntry) and defines UniDEC's symmetric loss over any of them.

/// Triplet loss with online hard-negative mining (NGAME), on raw scores. For each positive pair (i,p), with
/// N_i = the hardest_k highest-scoring negatives of row i (fewer if the row has fewer negatives; positives are
/// never picked): v_j = relu(s_ij - s_ip + margin), j in N_i. softmax_weighted_violators: loss_ip = Σ_j w_j v_j
/// with w = softmax of v_j / temperature over the violators (v_j > 0), 0 elsewhere, treated as constants;
/// otherwise loss_ip = mean of the |N_i| violations. Result: mean over positive pairs. Memory O(B·P + #pos·k).
torch::Tensor triplet_ohnm_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                const LossOptions& options);

/// Softmax / InfoNCE: for each positive (i,p), -log(e^{s_ip/τ} / Σ_j e^{s_ij/τ}) (the other positives stay in
/// the denominator); mean over positive pairs.
torch::Tensor softmax_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                           const LossOptions& options);

/// Decoupled softmax (DEXML): for each positive (i,p), -log(e^{s_ip/τ} / (e^{s_ip/τ} + Σ_{j∉P_i} e^{s_ij/τ}))
/// (the other positives are removed from the denominator); mean over positive pairs.
torch::Tensor decoupled_softmax_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                     const LossOptions& options);

/// Per-row SoftTop-k threshold t_i [B] (same dtype as scores): Σ_j σ(α(s_ij/τ + t_i)) = k, with α = topk_alpha,
/// τ = temperature and k = topk_k clamped to [1e-3, P - 1e-3]. Found in float64 by bisection on the bracket
/// [-max_j s_ij/τ, -min_j s_ij/τ] (shifted by logit(k/P)/α), accelerated by Newton steps that stay inside it;
/// at most 60 steps, usually ~10. Differentiable through the implicit-function gradient
/// ∂t_i/∂s_im = -σ'_im / (τ Σ_j σ'_ij).
torch::Tensor soft_topk_threshold(const torch::Tensor& scores, const LossOptions& options);

/// SoftTop-k membership probabilities σ(α(s/τ + t)) [B x P]; each row sums to k. Differentiable (through t too).
torch::Tensor soft_topk_probabilities(const torch::Tensor& scores, const LossOptions& options);

/// SoftTop-k (DEXML): loss_i = -Σ_{p∈P_i} log σ(α(s_ip/τ + t_i)) / |P_i|; mean over rows with positives.
torch::Tensor soft_topk_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                             const LossOptions& options);

/// Supervised contrastive (Khosla et al.; UniDEC, query->label direction):
/// loss_i = -(1/|P_i|) Σ_{p∈P_i} log(e^{s_ip/τ} / Σ_j e^{s_ij/τ}); mean over anchors with positives.
torch::Tensor supcon_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                          const LossOptions& options);

/// Binary cross-entropy with logits on raw scores, positives weighted by bce_positive_weight (C):
/// -[C·y·log σ(s) + (1-y)·log(1-σ(s))], mean over all B·P entries. Unlike the ranking losses above, negatives
/// alone carry signal here, so a batch without positives still gives the (non-zero) negatives' loss.
torch::Tensor bce_loss(const torch::Tensor& scores, const torch::Tensor& positive_mask, const LossOptions& options);

namespace loss_detail {

/// Checks the shared input contract (throws c10::Error on a programming error) and returns the scores to
/// compute with: bf16/half upcast to float32, other dtypes unchanged.
inline torch::Tensor checked_scores(const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                    const char* loss_name) {
  TORCH_CHECK(scores.dim() == 2, loss_name, ": scores must be [B x P], got ", scores.sizes());
  TORCH_CHECK(scores.is_floating_point(), loss_name, ": scores must be floating point, got ", scores.dtype());
  TORCH_CHECK(positive_mask.sizes() == scores.sizes(), loss_name, ": positive_mask ", positive_mask.sizes(),
              " does not match scores ", scores.sizes());
  TORCH_CHECK(positive_mask.scalar_type() == torch::kBool, loss_name, ": positive_mask must be bool, got ",
              positive_mask.dtype());
  TORCH_CHECK(positive_mask.device() == scores.device(), loss_name, ": positive_mask is on ",
              positive_mask.device(), ", scores on ", scores.device());
  const auto type = scores.scalar_type();
  return (type == torch::kHalf || type == torch::kBFloat16) ? scores.to(torch::kFloat) : scores;
}

/// The zero loss of a batch without positive pairs, still connected to `scores` so that backward() works.
inline torch::Tensor zero_loss(const torch::Tensor& scores) { return scores.sum() * 0; }

/// The positive pairs (i, p) of a mask, row-major: the losses evaluate their per-pair terms only there.
struct PositivePairs {
  torch::Tensor rows;    ///< [N] int64, i
  torch::Tensor labels;  ///< [N] int64, p
  std::int64_t count = 0;
};

inline PositivePairs positive_pairs(const torch::Tensor& positive_mask) {
  const torch::Tensor pairs = positive_mask.nonzero();  // [N x 2]
  return {pairs.select(/*dim=*/1, 0), pairs.select(/*dim=*/1, 1), pairs.size(0)};
}

/// The decoupled softmax weighted w per query and 1 − w per label (w = 1: the query→label loss alone), with a
/// backward written out by hand (symmetric_loss.cpp); `pairs` non-empty, `scores` checked.
torch::Tensor decoupled_softmax_at_once(const torch::Tensor& scores, const torch::Tensor& positive_mask, const PositivePairs& pairs,
                                        double temperature, double query_to_label_weight);
/// SupCon weighted w per query (anchor) and 1 − w per label, the same way.
torch::Tensor supcon_at_once(const torch::Tensor& scores, const PositivePairs& pairs, double temperature, double query_to_label_weight);

}  // namespace loss_detail

}  // namespace xmc
