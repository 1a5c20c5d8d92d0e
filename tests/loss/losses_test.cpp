// Losses against cases worked out by hand, gradients against central finite differences (float64), and the
// properties that tell the losses apart (DESIGN.md sections 2-3).
#include "engine/config/component_info.h"
#include "engine/loss/loss_entry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "engine/core/error.h"

namespace xmc {
namespace {

using LossFn = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const LossOptions&)>;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

torch::Tensor doubles(std::initializer_list<std::initializer_list<double>> rows) {
  std::vector<double> values;
  std::int64_t cols = 0;
  for (const auto& row : rows) {
    cols = static_cast<std::int64_t>(row.size());
    values.insert(values.end(), row.begin(), row.end());
  }
  return torch::tensor(values, torch::kDouble).reshape({static_cast<std::int64_t>(rows.size()), cols});
}

torch::Tensor mask_of(std::initializer_list<std::initializer_list<int>> rows) {
  std::vector<std::int64_t> values;
  std::int64_t cols = 0;
  for (const auto& row : rows) {
    cols = static_cast<std::int64_t>(row.size());
    values.insert(values.end(), row.begin(), row.end());
  }
  return torch::tensor(values, torch::kLong).reshape({static_cast<std::int64_t>(rows.size()), cols}).to(torch::kBool);
}

double value(const torch::Tensor& t) { return t.item<double>(); }

// The tiny 2x3 batch shared by the hand-worked cases:
//   scores row 0: 1.0  0.5 -0.5   positives {0, 2}
//   scores row 1: 0.7  0.8  0.1   positives {1}
torch::Tensor tiny_scores() { return doubles({{1.0, 0.5, -0.5}, {0.7, 0.8, 0.1}}); }
torch::Tensor tiny_mask() { return mask_of({{1, 0, 1}, {0, 1, 0}}); }

LossOptions with_temperature(double tau) {
  LossOptions options;
  options.temperature = tau;
  return options;
}

// ---------------------------------------------------------------------------------------------------------
// Hand-worked values.

TEST(Losses, SoftmaxTinyCaseByHand) {
  const double tau = 0.5;
  const double z0 = std::exp(1.0 / tau) + std::exp(0.5 / tau) + std::exp(-0.5 / tau);
  const double z1 = std::exp(0.7 / tau) + std::exp(0.8 / tau) + std::exp(0.1 / tau);
  const double expected = (-std::log(std::exp(1.0 / tau) / z0) - std::log(std::exp(-0.5 / tau) / z0) -
                           std::log(std::exp(0.8 / tau) / z1)) / 3;
  EXPECT_NEAR(value(softmax_loss(tiny_scores(), tiny_mask(), with_temperature(tau))), expected, 1e-12);
}

TEST(Losses, DecoupledSoftmaxTinyCaseByHand) {
  const double tau = 0.5;
  // Row 0's only negative is label 1; row 1's negatives are labels 0 and 2.
  const double l00 = -std::log(std::exp(1.0 / tau) / (std::exp(1.0 / tau) + std::exp(0.5 / tau)));
  const double l02 = -std::log(std::exp(-0.5 / tau) / (std::exp(-0.5 / tau) + std::exp(0.5 / tau)));
  const double l11 =
      -std::log(std::exp(0.8 / tau) / (std::exp(0.8 / tau) + std::exp(0.7 / tau) + std::exp(0.1 / tau)));
  EXPECT_NEAR(value(decoupled_softmax_loss(tiny_scores(), tiny_mask(), with_temperature(tau))),
              (l00 + l02 + l11) / 3, 1e-12);
}

TEST(Losses, SupConTinyCaseByHand) {
  const double tau = 0.5;
  const double z0 = std::exp(1.0 / tau) + std::exp(0.5 / tau) + std::exp(-0.5 / tau);
  const double z1 = std::exp(0.7 / tau) + std::exp(0.8 / tau) + std::exp(0.1 / tau);
  const double anchor0 = -(std::log(std::exp(1.0 / tau) / z0) + std::log(std::exp(-0.5 / tau) / z0)) / 2;
  const double anchor1 = -std::log(std::exp(0.8 / tau) / z1);
  EXPECT_NEAR(value(supcon_loss(tiny_scores(), tiny_mask(), with_temperature(tau))), (anchor0 + anchor1) / 2,
              1e-12);
}

TEST(Losses, BceTinyCaseByHand) {
  LossOptions options;
  options.bce_positive_weight = 2.0;
  options.temperature = 0.5;  // BCE ignores it
  const double c = 2.0;
  const double expected = (-c * std::log(sigmoid(1.0)) - std::log(1 - sigmoid(0.5)) - c * std::log(sigmoid(-0.5)) -
                           std::log(1 - sigmoid(0.7)) - c * std::log(sigmoid(0.8)) - std::log(1 - sigmoid(0.1))) /
                          6;
  EXPECT_NEAR(value(bce_loss(tiny_scores(), tiny_mask(), options)), expected, 1e-12);
}

TEST(Losses, TripletTinyCaseByHand) {
  LossOptions options;
  options.margin = 0.3;
  options.hardest_k = 2;
  // Pair (0,0): its only negative 0.5: relu(0.5 - 1.0 + 0.3) = 0.
  // Pair (0,2): relu(0.5 + 0.5 + 0.3) = 1.3.
  // Pair (1,1): negatives 0.7, 0.1: relu(0.7 - 0.8 + 0.3) = 0.2, relu(0.1 - 0.8 + 0.3) = 0.
  options.softmax_weighted_violators = false;  // mean of the row's (at most k) violations
  EXPECT_NEAR(value(triplet_ohnm_loss(tiny_scores(), tiny_mask(), options)), (0.0 + 1.3 / 1 + (0.2 + 0.0) / 2) / 3,
              1e-12);
  options.softmax_weighted_violators = true;  // each pair has at most one violator: weight 1
  EXPECT_NEAR(value(triplet_ohnm_loss(tiny_scores(), tiny_mask(), options)), (0.0 + 1.3 + 0.2) / 3, 1e-12);
}

TEST(Losses, TripletSoftmaxWeightsViolatorsAsConstants) {
  LossOptions options;
  options.margin = 0.3;
  options.hardest_k = 3;
  options.temperature = 0.1;
  options.softmax_weighted_violators = true;
  // One positive (0.5) against negatives 0.4, 0.3, -1.0: violations 0.2, 0.1, 0.
  const torch::Tensor scores = doubles({{0.5, 0.4, 0.3, -1.0}}).requires_grad_(true);
  const torch::Tensor mask = mask_of({{1, 0, 0, 0}});
  const double tau = 0.1;
  const double w1 = std::exp(0.2 / tau) / (std::exp(0.2 / tau) + std::exp(0.1 / tau));
  const double w2 = std::exp(0.1 / tau) / (std::exp(0.2 / tau) + std::exp(0.1 / tau));
  const torch::Tensor loss = triplet_ohnm_loss(scores, mask, options);
  EXPECT_NEAR(value(loss), w1 * 0.2 + w2 * 0.1, 1e-12);
  // Weights are constants: ∂/∂s = w1 (e_1 - e_0) + w2 (e_2 - e_0).
  const torch::Tensor grad = torch::autograd::grad({loss}, {scores})[0];
  EXPECT_NEAR(value(grad[0][0]), -(w1 + w2), 1e-12);
  EXPECT_NEAR(value(grad[0][1]), w1, 1e-12);
  EXPECT_NEAR(value(grad[0][2]), w2, 1e-12);
  EXPECT_NEAR(value(grad[0][3]), 0.0, 1e-12);
}

TEST(Losses, SoftTopKTinyCaseByHand) {
  LossOptions options;
  options.temperature = 0.5;
  options.topk_alpha = 2.0;
  options.topk_k = 1.5;
  // Each row is symmetric around its middle score c, so t = -c/τ: σ(x) + σ(0) + σ(-x) = 1 + 0.5 = k.
  const torch::Tensor scores = doubles({{1.0, 0.5, 0.0}, {0.7, 0.8, 0.9}});
  const torch::Tensor mask = mask_of({{1, 0, 1}, {0, 1, 0}});
  const double tau = 0.5;
  const double alpha = 2.0;
  const torch::Tensor t = soft_topk_threshold(scores, options);
  EXPECT_NEAR(value(t[0]), -0.5 / tau, 1e-12);
  EXPECT_NEAR(value(t[1]), -0.8 / tau, 1e-12);
  const double row0 = -(std::log(sigmoid(alpha * (1.0 / tau - 0.5 / tau))) +
                        std::log(sigmoid(alpha * (0.0 / tau - 0.5 / tau)))) / 2;
  const double row1 = -std::log(sigmoid(alpha * (0.8 / tau - 0.8 / tau)));  // = log 2
  EXPECT_NEAR(value(soft_topk_loss(scores, mask, options)), (row0 + row1) / 2, 1e-12);
}

// ---------------------------------------------------------------------------------------------------------
// Gradients against central finite differences, float64.

void expect_gradient_matches_finite_differences(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                                                const torch::Tensor& scores, const std::string& what) {
  const torch::Tensor s = scores.clone().requires_grad_(true);
  const torch::Tensor loss = f(s);
  const torch::Tensor grad = torch::autograd::grad({loss}, {s})[0].contiguous();
  const torch::NoGradGuard no_grad;
  const double h = 1e-6;
  const torch::Tensor flat_grad = grad.view(-1);
  for (std::int64_t e = 0; e < scores.numel(); ++e) {
    torch::Tensor plus = scores.clone();
    torch::Tensor minus = scores.clone();
    plus.view(-1)[e] += h;
    minus.view(-1)[e] -= h;
    const double numeric = (value(f(plus)) - value(f(minus))) / (2 * h);
    const double analytic = value(flat_grad[e]);
    EXPECT_NEAR(analytic, numeric, 1e-6 * (1 + std::abs(numeric))) << what << " entry " << e;
  }
}

// Random scores and masks with a row of only positives and a row without positives.
struct RandomBatch {
  torch::Tensor scores;
  torch::Tensor mask;
  explicit RandomBatch(std::uint64_t seed, std::int64_t rows = 5, std::int64_t cols = 7) {
    torch::manual_seed(seed);
    scores = torch::randn({rows, cols}, torch::kDouble);
    mask = torch::rand({rows, cols}, torch::kDouble) < 0.35;
    mask[0].fill_(true);
    mask[1].fill_(false);
    mask.index_put_({2, 3}, true);
  }
};

TEST(LossGradients, EveryLossMatchesFiniteDifferences) {
  LossOptions options;
  options.temperature = 0.5;
  options.margin = 0.3;
  options.hardest_k = 3;
  options.softmax_weighted_violators = false;  // with weights treated as constants, see the test above
  options.topk_k = 2.5;
  options.topk_alpha = 1.5;
  options.bce_positive_weight = 3.0;
  const std::vector<std::pair<std::string, LossFn>> losses = {
      {"softmax", softmax_loss},         {"decoupled_softmax", decoupled_softmax_loss},
      {"supcon", supcon_loss},           {"softtopk", soft_topk_loss},
      {"triplet", triplet_ohnm_loss},    {"bce", bce_loss},
  };
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const RandomBatch batch(seed);
    for (const auto& [name, loss] : losses) {
      expect_gradient_matches_finite_differences(
          [&, &loss = loss](const torch::Tensor& s) { return loss(s, batch.mask, options); }, batch.scores,
          name + " seed " + std::to_string(seed));
    }
  }
}

TEST(LossGradients, GradientsAreFiniteForRowsWithoutNegativesOrPositives) {
  const RandomBatch batch(7);
  const LossOptions options = with_temperature(0.05);
  for (const auto& kind : {loss_entry("triplet"), loss_entry("softmax"), loss_entry("decoupled_softmax"), loss_entry("softtopk"),
                          loss_entry("supcon"), loss_entry("bce")}) {
    const torch::Tensor s = batch.scores.clone().requires_grad_(true);
    compute_loss(kind, s, batch.mask, options).backward();
    EXPECT_TRUE(torch::isfinite(s.grad()).all().item<bool>()) << kind.name;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Properties.

TEST(DecoupledSoftmax, OtherPositivesLeaveTheDenominator) {
  const LossOptions options = with_temperature(0.5);
  // One query, positives p (label 0) and q (label 1), negatives labels 2 and 3.
  const torch::Tensor both = mask_of({{1, 1, 0, 0}});
  const torch::Tensor single = mask_of({{1, 0, 0}});
  double first_lp = 0;
  for (const double sq : {-3.0, 0.2, 0.9, 6.0}) {
    const torch::Tensor scores = doubles({{0.4, sq, 0.1, -0.2}});
    // L = (l_p + l_q) / 2, and l_q is q against the negatives alone.
    const double lq = value(decoupled_softmax_loss(doubles({{sq, 0.1, -0.2}}), single, options));
    const double lp = 2 * value(decoupled_softmax_loss(scores, both, options)) - lq;
    if (sq == -3.0) first_lp = lp;
    EXPECT_NEAR(lp, first_lp, 1e-12) << "s_q = " << sq;
    // ... and l_p is p against the negatives alone.
    EXPECT_NEAR(lp, value(decoupled_softmax_loss(doubles({{0.4, 0.1, -0.2}}), single, options)), 1e-12);
    // The gradient w.r.t. s_q is l_q's alone: no cross term from p.
    const torch::Tensor s = scores.clone().requires_grad_(true);
    const torch::Tensor grad = torch::autograd::grad({decoupled_softmax_loss(s, both, options)}, {s})[0];
    const torch::Tensor sq_only = doubles({{sq, 0.1, -0.2}}).requires_grad_(true);
    const torch::Tensor grad_q =
        torch::autograd::grad({decoupled_softmax_loss(sq_only, single, options)}, {sq_only})[0];
    EXPECT_NEAR(value(grad[0][1]), value(grad_q[0][0]) / 2, 1e-12);
  }
  // Plain softmax keeps q in p's denominator, so its p-part moves with s_q.
  const torch::Tensor low = doubles({{0.4, -3.0, 0.1, -0.2}});
  const torch::Tensor high = doubles({{0.4, 6.0, 0.1, -0.2}});
  EXPECT_GT(std::abs(value(softmax_loss(high, both, options)) - value(softmax_loss(low, both, options))), 1.0);
}

TEST(DecoupledSoftmax, EqualsSoftmaxWithOnePositivePerRow) {
  torch::manual_seed(11);
  const torch::Tensor scores = torch::randn({6, 9}, torch::kDouble);
  const torch::Tensor labels = torch::randint(0, 9, {6}, torch::kLong);
  const torch::Tensor mask = torch::one_hot(labels, 9).to(torch::kBool);
  const LossOptions options = with_temperature(0.1);
  EXPECT_NEAR(value(decoupled_softmax_loss(scores, mask, options)), value(softmax_loss(scores, mask, options)), 1e-12);
}

TEST(SoftTopK, ProbabilitiesSumToKPerRow) {
  torch::manual_seed(3);
  LossOptions options;
  options.temperature = 0.1;
  options.topk_alpha = 1.0;
  options.topk_k = 5;
  const torch::Tensor scores = torch::randn({4, 50}, torch::kDouble);
  const torch::Tensor sums = soft_topk_probabilities(scores, options).sum(1);
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_NEAR(value(sums[i]), 5.0, 1e-9);
  // float32 scores: same, to float precision.
  const torch::Tensor float_sums = soft_topk_probabilities(scores.to(torch::kFloat), options).sum(1);
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_NEAR(value(float_sums[i]), 5.0, 1e-3);
  // k is clamped into (0, P).
  options.topk_k = 80;
  const torch::Tensor clamped = soft_topk_probabilities(scores, options).sum(1);
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_NEAR(value(clamped[i]), 50.0 - 1e-3, 1e-6);
}

TEST(SoftTopK, ThresholdSolvesSharpAndTiedRows) {
  LossOptions options;
  options.temperature = 0.01;
  options.topk_alpha = 1.0;
  options.topk_k = 2;
  // Two tied pairs, 100 apart after dividing by τ: by symmetry t = -50 (2σ(50) + 2σ(-50) = 2).
  const torch::Tensor tied = doubles({{1.0, 0.0, 1.0, 0.0}});
  EXPECT_NEAR(value(soft_topk_threshold(tied, options)[0]), -0.5 / 0.01, 1e-9);
  // Sharp random rows (probabilities close to 0 or 1) and a row of equal scores still sum to k.
  torch::manual_seed(13);
  const torch::Tensor scores =
      torch::cat({torch::randn({3, 200}, torch::kDouble), torch::ones({1, 200}, torch::kDouble)});
  for (const double k : {1.0, 2.0, 7.5, 199.0}) {
    options.topk_k = k;
    const torch::Tensor sums = soft_topk_probabilities(scores, options).sum(1);
    for (std::int64_t i = 0; i < 4; ++i) EXPECT_NEAR(value(sums[i]), k, 1e-9) << "k " << k << " row " << i;
  }
}

TEST(SoftTopK, ImplicitThresholdGradientMatchesFiniteDifferences) {
  torch::manual_seed(5);
  LossOptions options;
  options.temperature = 0.5;
  options.topk_alpha = 2.0;
  options.topk_k = 3;
  const torch::Tensor scores = torch::randn({3, 8}, torch::kDouble);
  const torch::Tensor weights = torch::randn({3, 8}, torch::kDouble);
  // A weighted sum of the probabilities: its gradient runs through t (a detached t would fail this).
  expect_gradient_matches_finite_differences(
      [&](const torch::Tensor& s) { return (soft_topk_probabilities(s, options) * weights).sum(); }, scores,
      "probabilities");
  expect_gradient_matches_finite_differences(
      [&](const torch::Tensor& s) { return (soft_topk_threshold(s, options) * weights.select(1, 0)).sum(); },
      scores, "threshold");
  // Σ_j p_ij = k for every s, so its gradient vanishes; it would not with t treated as a constant.
  const torch::Tensor s = scores.clone().requires_grad_(true);
  const torch::Tensor grad = torch::autograd::grad({soft_topk_probabilities(s, options).sum()}, {s})[0];
  EXPECT_LT(grad.abs().max().item<double>(), 1e-10);
}

TEST(Triplet, OnlyTheKHardestNegativesCount) {
  LossOptions options;
  options.margin = 0.3;
  options.hardest_k = 2;
  options.temperature = 0.1;
  const torch::Tensor mask = mask_of({{1, 0, 0, 0, 0}});
  for (const bool weighted : {false, true}) {
    options.softmax_weighted_violators = weighted;
    // Hardest negatives are labels 1 and 2; label 3 (0.45, would violate) and label 4 are not among them.
    const double base = value(triplet_ohnm_loss(doubles({{0.6, 0.8, 0.7, 0.45, 0.0}}), mask, options));
    for (const double other : {-5.0, 0.3, 0.5, 0.69}) {
      EXPECT_NEAR(value(triplet_ohnm_loss(doubles({{0.6, 0.8, 0.7, other, 0.0}}), mask, options)), base, 1e-12)
          << "weighted " << weighted << ", s_3 = " << other;
    }
    const torch::Tensor s = doubles({{0.6, 0.8, 0.7, 0.45, 0.0}}).requires_grad_(true);
    const torch::Tensor grad = torch::autograd::grad({triplet_ohnm_loss(s, mask, options)}, {s})[0];
    EXPECT_EQ(value(grad[0][3]), 0.0);
    EXPECT_EQ(value(grad[0][4]), 0.0);
  }
  // Unweighted by hand: violations relu(0.8 - 0.6 + 0.3) = 0.5 and relu(0.7 - 0.6 + 0.3) = 0.4.
  options.softmax_weighted_violators = false;
  EXPECT_NEAR(value(triplet_ohnm_loss(doubles({{0.6, 0.8, 0.7, 0.45, 0.0}}), mask, options)), (0.5 + 0.4) / 2,
              1e-12);
}

TEST(Triplet, NeverPicksAPositive) {
  LossOptions options;
  options.margin = 0.3;
  options.hardest_k = 3;  // more than the row's two negatives
  options.softmax_weighted_violators = false;
  const torch::Tensor mask = mask_of({{1, 1, 0, 0}});
  // Positives score highest; the negatives (0.1, 0.0) violate nothing. Picking positive 0.9 as a negative of
  // pair (0,1) would give relu(0.9 - 0.8 + 0.3) = 0.4.
  EXPECT_EQ(value(triplet_ohnm_loss(doubles({{0.9, 0.8, 0.1, 0.0}}), mask, options)), 0.0);
  // With violations: pair (0,0): relu(0.7-0.9+0.3)=0.1, relu(0.6-0.9+0.3)=0 -> mean over the 2 negatives 0.05;
  // pair (0,1): relu(0.7-0.8+0.3)=0.2, relu(0.6-0.8+0.3)=0.1 -> 0.15.
  EXPECT_NEAR(value(triplet_ohnm_loss(doubles({{0.9, 0.8, 0.7, 0.6}}), mask, options)), (0.05 + 0.15) / 2, 1e-12);
  // A row of positives only has no negatives at all: no loss.
  EXPECT_EQ(value(triplet_ohnm_loss(doubles({{0.9, 0.8}}), mask_of({{1, 1}}), options)), 0.0);
}

TEST(Losses, ZeroPositiveBatchGivesZeroAndBackwardWorks) {
  const torch::Tensor none = torch::zeros({3, 4}, torch::kBool);
  const LossOptions options;
  for (const auto& kind :
       {loss_entry("triplet"), loss_entry("softmax"), loss_entry("decoupled_softmax"), loss_entry("softtopk"), loss_entry("supcon")}) {
    const torch::Tensor s = torch::randn({3, 4}, torch::kDouble).requires_grad_(true);
    const torch::Tensor loss = compute_loss(kind, s, none, options);
    EXPECT_EQ(loss.dim(), 0) << kind.name;
    EXPECT_EQ(value(loss), 0.0) << kind.name;
    loss.backward();
    ASSERT_TRUE(s.grad().defined()) << kind.name;
    EXPECT_EQ(s.grad().abs().sum().item<double>(), 0.0) << kind.name;
  }
  // BCE: the negatives alone still carry a loss: mean of -log(1 - σ(s)) = mean of softplus(s).
  const torch::Tensor s = doubles({{0.0, 1.0}}).requires_grad_(true);
  const torch::Tensor loss = bce_loss(s, mask_of({{0, 0}}), options);
  EXPECT_NEAR(value(loss), (std::log(2.0) + std::log(1 + std::exp(1.0))) / 2, 1e-12);
  loss.backward();
  EXPECT_NEAR(value(s.grad()[0][0]), sigmoid(0.0) / 2, 1e-12);
}

TEST(Losses, ComputeLossDispatchesAndKeepsFloat) {
  const RandomBatch batch(9);
  const torch::Tensor scores = batch.scores.to(torch::kFloat);
  LossOptions options;
  options.temperature = 0.5;
  EXPECT_EQ(value(compute_loss(loss_entry("softmax"), scores, batch.mask, options)),
            value(softmax_loss(scores, batch.mask, options)));
  EXPECT_EQ(value(compute_loss(loss_entry("decoupled_softmax"), scores, batch.mask, options)),
            value(decoupled_softmax_loss(scores, batch.mask, options)));
  EXPECT_EQ(value(compute_loss(loss_entry("supcon"), scores, batch.mask, options)),
            value(supcon_loss(scores, batch.mask, options)));
  EXPECT_EQ(value(compute_loss(loss_entry("softtopk"), scores, batch.mask, options)),
            value(soft_topk_loss(scores, batch.mask, options)));
  EXPECT_EQ(value(compute_loss(loss_entry("triplet"), scores, batch.mask, options)),
            value(triplet_ohnm_loss(scores, batch.mask, options)));
  EXPECT_EQ(value(compute_loss(loss_entry("bce"), scores, batch.mask, options)),
            value(bce_loss(scores, batch.mask, options)));
  // float32 in, float32 loss and gradient out, close to the float64 value.
  for (const auto& kind : {loss_entry("triplet"), loss_entry("softmax"), loss_entry("decoupled_softmax"), loss_entry("softtopk"),
                          loss_entry("supcon"), loss_entry("bce")}) {
    const torch::Tensor s = scores.clone().requires_grad_(true);
    const torch::Tensor loss = compute_loss(kind, s, batch.mask, options);
    EXPECT_EQ(loss.scalar_type(), torch::kFloat) << kind.name;
    loss.backward();
    EXPECT_EQ(s.grad().scalar_type(), torch::kFloat) << kind.name;
    EXPECT_NEAR(value(loss), value(compute_loss(kind, batch.scores, batch.mask, options)), 1e-4) << kind.name;
    // bf16 (autocast) scores are computed in float32; the gradient comes back as bf16.
    const torch::Tensor half = scores.to(torch::kBFloat16).requires_grad_(true);
    const torch::Tensor half_loss = compute_loss(kind, half, batch.mask, options);
    EXPECT_EQ(half_loss.scalar_type(), torch::kFloat) << kind.name;
    half_loss.backward();
    EXPECT_EQ(half.grad().scalar_type(), torch::kBFloat16) << kind.name;
  }
}

TEST(Losses, RejectsMismatchedInputs) {
  const LossOptions options;
  EXPECT_THROW(softmax_loss(torch::zeros({2, 3}), torch::zeros({2, 4}, torch::kBool), options), c10::Error);
  EXPECT_THROW(softmax_loss(torch::zeros({2, 3}), torch::zeros({2, 3}, torch::kFloat), options), c10::Error);
  EXPECT_THROW(softmax_loss(torch::zeros({6}), torch::zeros({6}, torch::kBool), options), c10::Error);
}

// The registry: every loss once, by the name the config takes, the config's choices the same list; the
// losses with a sharded or a two-way form say so (DEXML's all-label losses; UniDEC's SupCon and decoupled softmax).
TEST(LossRegistry, ListsEveryLossOnceWithItsForms) {
  std::vector<std::string> names;
  for (const LossEntry& loss : registered_losses()) {
    names.push_back(loss.name);
    EXPECT_NE(loss.compute, nullptr) << loss.name;
    EXPECT_EQ(&loss_entry(loss.name), &loss) << loss.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"triplet", "softmax", "decoupled_softmax", "softtopk", "supcon", "bce"}));
  EXPECT_EQ(names, registered_loss_names()) << "the config's choices are the registered losses";
  for (const LossEntry& loss : registered_losses()) {
    const bool sharded = loss.name == "decoupled_softmax" || loss.name == "softtopk";
    const bool two_way = loss.name == "decoupled_softmax" || loss.name == "supcon";
    EXPECT_EQ(loss.sharded != nullptr, sharded) << loss.name;
    EXPECT_EQ(loss.both_directions != nullptr, two_way) << loss.name;
  }
}

TEST(LossRegistry, UnknownNameNamesTheValueAndTheValidOnes) {
  try {
    loss_entry("focal");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'focal'"), std::string::npos) << message;
    for (const char* name : {"triplet", "softmax", "decoupled_softmax", "softtopk", "supcon", "bce"}) {
      EXPECT_NE(message.find(name), std::string::npos) << message;
    }
  }
  EXPECT_THROW(loss_entry(""), ConfigError);
  EXPECT_THROW(loss_entry("Softmax"), ConfigError);
}

}  // namespace
}  // namespace xmc
