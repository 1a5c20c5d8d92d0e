// UniDEC's symmetric loss. SupCon and the decoupled softmax, the two ℓ_MC of UniDEC's recipe, are computed for
// both directions at once: one matrix of exponentials e^{L − max L} whose row and column sums give both
// directions' log-sum-exps (a shift per row and per column only where the logits spread too far for one), the
// positive pairs found once (or handed in by the caller), and a backward written out by hand that scales that
// matrix by row and by column. Composed from the one-direction losses, the same value costs two logits
// matrices, a transposed (strided) reduction, and an [B x P] zero-filled scatter per direction for the
// gathered positives' gradient. Other losses go through the composition.
#include <limits>

#include "engine/loss/loss_entry.h"

namespace xmc {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// v where finite, 0 where -inf (a row or column whose log-sum-exp ran over no entries).
torch::Tensor finite_or_zero(const torch::Tensor& v) { return torch::where(torch::isfinite(v), v, torch::zeros_like(v)); }

/// How many of `indices` fall on each of 0..n-1, as `options`' dtype (the positives per row or column, from
/// the pairs rather than by summing the [B x P] mask).
torch::Tensor pair_counts(const torch::Tensor& indices, std::int64_t n, const torch::TensorOptions& options) {
  return torch::zeros({n}, options).index_add_(0, indices, torch::ones({indices.size(0)}, options));
}

/// The largest spread of logits (max − min of S/τ) for which one shift serves every row and column: e^{-60}
/// (~1e-26) is far above float's smallest normal number, so no row or column sum of e^{L − max L} vanishes.
/// Cosine scores at τ = 0.05 spread at most 40.
constexpr double kSharedShiftSpread = 60;

/// e^{L − c} for L = S/τ and c = max L, when the logits' spread allows one shift (kSharedShiftSpread); undefined
/// otherwise. With it the row and column log-sum-exps are log Σ + c of one matrix's row and column sums, and
/// the softmaxes of backward are that matrix scaled by row and by column: one exponential for both directions.
std::pair<torch::Tensor, double> shifted_exponentials(const torch::Tensor& scores, double temperature) {
  const auto [low, high] = torch::aminmax(scores);
  const torch::Tensor bounds = torch::stack({low, high}).to(torch::kCPU, torch::kFloat64);  // one device sync
  const double max_logit = bounds[1].item<double>() / temperature;
  if (!(max_logit - bounds[0].item<double>() / temperature <= kSharedShiftSpread)) return {torch::Tensor(), 0.0};
  return {(scores * (1.0 / temperature)).sub_(max_logit).exp_(), max_logit};
}

/// The entries of `scores` at (rows, columns), through one flat gather.
torch::Tensor entries_at(const torch::Tensor& scores, const torch::Tensor& rows, const torch::Tensor& columns) {
  return scores.reshape({-1}).index_select(0, rows * scores.size(1) + columns);
}

/// Each function saves what its backward needs to build the gradient in a few element-wise passes: the
/// exponentials or logits, the row and column normalisers, the pairs, and the weights applied per pair and per
/// row and column.
struct SymmetricSupCon : public torch::autograd::Function<SymmetricSupCon> {
  /// (1/A_r) Σ_{i: n_i>0} (1/n_i) Σ_{p∈P_i} (lse_row_i - L_ip) weighted w, plus the same over columns weighted 1-w.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& pair_rows,
                               const torch::Tensor& pair_labels, double temperature, double query_to_label_weight) {
    const torch::Tensor scores = input.contiguous();  // the pairs are flat offsets into it, and so into the gradient
    const auto [exponentials, shift] = shifted_exponentials(scores, temperature);
    torch::Tensor logits, row_lse, column_lse, row_sums, column_sums;
    if (exponentials.defined()) {
      row_sums = exponentials.sum(/*dim=*/1);
      column_sums = exponentials.sum(/*dim=*/0);
      row_lse = row_sums.log().add_(shift);
      column_lse = column_sums.log().add_(shift);
    } else {  // logits too spread for one shift: a shift per row and per column
      logits = scores / temperature;
      row_lse = logits.logsumexp(/*dim=*/1);
      column_lse = logits.logsumexp(/*dim=*/0);
    }
    const std::int64_t rows = scores.size(0), columns = scores.size(1);
    const torch::Tensor row_positives = pair_counts(pair_rows, rows, scores.options());          // n_i
    const torch::Tensor column_positives = pair_counts(pair_labels, columns, scores.options());  // m_j
    const torch::Tensor row_anchors = (row_positives > 0).sum().to(scores.dtype());
    const torch::Tensor column_anchors = (column_positives > 0).sum().to(scores.dtype());
    // Per pair, the weight of its term in each direction: w/(A_r·n_i) and (1-w)/(A_c·m_j).
    const double w = query_to_label_weight;
    const torch::Tensor row_pair_weight = w / (row_anchors * row_positives.index_select(0, pair_rows));
    const torch::Tensor column_pair_weight = (1.0 - w) / (column_anchors * column_positives.index_select(0, pair_labels));
    const torch::Tensor positive_logits = entries_at(scores, pair_rows, pair_labels) / temperature;
    const torch::Tensor loss = ((row_lse.index_select(0, pair_rows) - positive_logits) * row_pair_weight +
                                (column_lse.index_select(0, pair_labels) - positive_logits) * column_pair_weight)
                                   .sum();
    // c_i = w·[n_i>0]/A_r and c'_j = (1-w)·[m_j>0]/A_c, divided by the row and column sums where those exist.
    torch::Tensor row_weight = (row_positives > 0).to(scores.dtype()) * (w / row_anchors);
    torch::Tensor column_weight = (column_positives > 0).to(scores.dtype()) * ((1.0 - w) / column_anchors);
    if (exponentials.defined()) {
      row_weight = row_weight / row_sums;
      column_weight = column_weight / column_sums;
    }
    ctx->save_for_backward({exponentials.defined() ? exponentials : logits, row_lse, column_lse, pair_rows, pair_labels, row_pair_weight,
                            column_pair_weight, row_weight, column_weight});
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["shared_shift"] = exponentials.defined();
    return loss;
  }

  /// ∂/∂L_ij = c_i·softmax_row(L)_ij + c'_j·softmax_column(L)_ij - [M_ij](w/(A_r n_i) + (1-w)/(A_c m_j)); then ÷τ.
  /// With one shift, softmax_row(L)_ij = e^{L_ij − c}/R_i and softmax_column(L)_ij = e^{L_ij − c}/C_j.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &saved_matrix = saved[0], &row_lse = saved[1], &column_lse = saved[2], &rows = saved[3], &labels = saved[4];
    const torch::Tensor &row_pair_weight = saved[5], &column_pair_weight = saved[6], &row_weight = saved[7], &column_weight = saved[8];
    torch::Tensor grad;
    if (ctx->saved_data["shared_shift"].toBool()) {
      grad = saved_matrix * row_weight.unsqueeze(1);
      grad.addcmul_(saved_matrix, column_weight.unsqueeze(0));
    } else {
      grad = (saved_matrix - row_lse.unsqueeze(1)).exp_().mul_(row_weight.unsqueeze(1));
      grad.addcmul_((saved_matrix - column_lse.unsqueeze(0)).exp_(), column_weight.unsqueeze(0));
    }
    grad.view({-1}).index_add_(0, rows * grad.size(1) + labels, -(row_pair_weight + column_pair_weight));
    grad.mul_(grad_outputs[0] / ctx->saved_data["temperature"].toDouble());
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct SymmetricDecoupledSoftmax : public torch::autograd::Function<SymmetricDecoupledSoftmax> {
  /// (1/N) Σ_{(i,p)∈M} [w·(logaddexp(L_ip, G_i) - L_ip) + (1-w)·(logaddexp(L_ip, G'_p) - L_ip)], with G_i the
  /// log-sum-exp of row i's negatives and G'_p that of column p's. w = 1 is DEXML's one-direction loss: the
  /// columns are then not computed at all.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& positive_mask,
                               const torch::Tensor& pair_rows, const torch::Tensor& pair_labels, double temperature,
                               double query_to_label_weight) {
    const torch::Tensor scores = input.contiguous();  // the pairs are flat offsets into it, and so into the gradient
    const double w = query_to_label_weight;
    const bool with_columns = w < 1.0;
    // The negatives' exponentials (0 at the positives) or, too spread for one shift, their logits (-inf there).
    auto [negatives, shift] = shifted_exponentials(scores, temperature);
    const bool shared_shift = negatives.defined();
    torch::Tensor row_lse, column_lse, row_sums, column_sums;  // lse: -inf for a row or column of positives only
    if (shared_shift) {
      negatives.masked_fill_(positive_mask, 0.0);
      row_sums = negatives.sum(/*dim=*/1);
      row_lse = row_sums.log().add_(shift);
      if (with_columns) {
        column_sums = negatives.sum(/*dim=*/0);
        column_lse = column_sums.log().add_(shift);
      }
    } else {
      negatives = (scores / temperature).masked_fill_(positive_mask, -kInfinity);
      row_lse = negatives.logsumexp(/*dim=*/1);
      if (with_columns) column_lse = negatives.logsumexp(/*dim=*/0);
    }
    const torch::Tensor positive_logits = entries_at(scores, pair_rows, pair_labels) / temperature;
    const torch::Tensor pair_row_lse = row_lse.index_select(0, pair_rows);
    const auto count = static_cast<double>(pair_rows.size(0));
    torch::Tensor terms = w * (torch::logaddexp(positive_logits, pair_row_lse) - positive_logits);
    // ∂/∂L_ip of a pair's term through its own logit: -σ(G - L_ip) per direction; through G: σ(G - L_ip).
    const torch::Tensor row_sigmoid = w * torch::sigmoid(pair_row_lse - positive_logits);
    torch::Tensor column_sigmoid;
    if (with_columns) {
      const torch::Tensor pair_column_lse = column_lse.index_select(0, pair_labels);
      terms = terms + (1.0 - w) * (torch::logaddexp(positive_logits, pair_column_lse) - positive_logits);
      column_sigmoid = (1.0 - w) * torch::sigmoid(pair_column_lse - positive_logits);
    }
    const torch::Tensor loss = terms.sum() / count;
    ctx->save_for_backward({negatives, row_lse, column_lse, pair_rows, pair_labels, row_sigmoid, column_sigmoid, row_sums, column_sums});
    ctx->saved_data["scale"] = 1.0 / (count * temperature);
    ctx->saved_data["shared_shift"] = shared_shift;
    return loss;
  }

  /// Negatives: ∂/∂L_ij = g_i·e^{L_ij - G_i} + g'_j·e^{L_ij - G'_j}, g_i = Σ_{p∈P_i} w·σ(G_i - L_ip) and
  /// g'_j = Σ_{i∈P'_j} (1-w)·σ(G'_j - L_ij); positives: -(w·σ(G_i - L_ip) + (1-w)·σ(G'_p - L_ip)); all ÷(N·τ).
  /// With one shift c, e^{L_ij - G_i} = e^{L_ij - c}/R_i and e^{L_ij - G'_j} = e^{L_ij - c}/C_j.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &negatives = saved[0], &row_lse = saved[1], &column_lse = saved[2], &rows = saved[3], &labels = saved[4];
    const torch::Tensor &row_sigmoid = saved[5], &column_sigmoid = saved[6], &row_sums = saved[7], &column_sums = saved[8];
    const bool with_columns = column_sigmoid.defined();
    torch::Tensor row_weight = torch::zeros_like(row_lse).index_add_(0, rows, row_sigmoid);
    torch::Tensor column_weight = with_columns ? torch::zeros_like(column_lse).index_add_(0, labels, column_sigmoid) : torch::Tensor();
    torch::Tensor grad;
    if (ctx->saved_data["shared_shift"].toBool()) {
      // A row or column without negatives has a zero sum and zero exponentials: its weight is dropped, not 0/0.
      row_weight = torch::where(row_sums > 0, row_weight / row_sums, torch::zeros_like(row_weight));
      grad = negatives * row_weight.unsqueeze(1);
      if (with_columns) {
        column_weight = torch::where(column_sums > 0, column_weight / column_sums, torch::zeros_like(column_weight));
        grad.addcmul_(negatives, column_weight.unsqueeze(0));
      }
    } else {
      // Positives sit at -inf in `negatives`, so both exponentials are 0 there; a -inf log-sum-exp (no negatives
      // in that row or column) is taken as 0, its exponentials being 0 anyway.
      grad = (negatives - finite_or_zero(row_lse).unsqueeze(1)).exp_().mul_(row_weight.unsqueeze(1));
      if (with_columns) grad.addcmul_((negatives - finite_or_zero(column_lse).unsqueeze(0)).exp_(), column_weight.unsqueeze(0));
    }
    grad.view({-1}).index_add_(0, rows * grad.size(1) + labels, with_columns ? -(row_sigmoid + column_sigmoid) : -row_sigmoid);
    grad.mul_(grad_outputs[0] * ctx->saved_data["scale"].toDouble());
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

/// Both directions at once, by the loss's own pass over the positive pairs.
torch::Tensor symmetric_loss_at_once(const LossEntry& loss, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                                     const loss_detail::PositivePairs& pairs, const LossOptions& options, double query_to_label_weight) {
  const torch::Tensor s = loss_detail::checked_scores(scores, positive_mask, "symmetric loss");
  if (pairs.count == 0) return loss_detail::zero_loss(s);
  return loss.both_directions(s, positive_mask, pairs, options, query_to_label_weight);
}

bool computed_at_once(const LossEntry& loss, double query_to_label_weight) {
  return query_to_label_weight < 1.0 && loss.both_directions != nullptr;
}

}  // namespace

torch::Tensor loss_detail::supcon_at_once(const torch::Tensor& scores, const PositivePairs& pairs, double temperature,
                                          double query_to_label_weight) {
  return SymmetricSupCon::apply(scores, pairs.rows, pairs.labels, temperature, query_to_label_weight);
}

torch::Tensor loss_detail::decoupled_softmax_at_once(const torch::Tensor& scores, const torch::Tensor& positive_mask, const PositivePairs& pairs,
                                                     double temperature, double query_to_label_weight) {
  return SymmetricDecoupledSoftmax::apply(scores, positive_mask, pairs.rows, pairs.labels, temperature, query_to_label_weight);
}

torch::Tensor symmetric_loss(const LossEntry& loss, const torch::Tensor& scores, const torch::Tensor& positive_mask, const torch::Tensor& pair_rows,
                             const torch::Tensor& pair_columns, const LossOptions& options, double query_to_label_weight) {
  if (!computed_at_once(loss, query_to_label_weight)) return symmetric_loss(loss, scores, positive_mask, options, query_to_label_weight);
  TORCH_CHECK(pair_rows.dim() == 1 && pair_rows.sizes() == pair_columns.sizes(), "symmetric loss: pair rows ", pair_rows.sizes(),
              " and columns ", pair_columns.sizes(), " must be two [N] lists");
  const torch::Device device = scores.device();
  const loss_detail::PositivePairs pairs{pair_rows.to(device, torch::kInt64), pair_columns.to(device, torch::kInt64), pair_rows.size(0)};
  return symmetric_loss_at_once(loss, scores, positive_mask, pairs, options, query_to_label_weight);
}

torch::Tensor symmetric_loss(const LossEntry& loss, const torch::Tensor& scores, const torch::Tensor& positive_mask, const LossOptions& options,
                             double query_to_label_weight) {
  if (query_to_label_weight >= 1.0) return loss.compute(scores, positive_mask, options);
  if (computed_at_once(loss, query_to_label_weight))
    return symmetric_loss_at_once(loss, scores, positive_mask, loss_detail::positive_pairs(positive_mask), options, query_to_label_weight);
  const torch::Tensor query_to_label = loss.compute(scores, positive_mask, options);
  const torch::Tensor label_to_query = loss.compute(scores.t(), positive_mask.t(), options);
  return query_to_label_weight * query_to_label + (1.0 - query_to_label_weight) * label_to_query;
}

}  // namespace xmc
