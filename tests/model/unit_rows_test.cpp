// unit_rows against LibTorch's normalize: the same rows and the same gradients, including rows at and below
// eps (where normalize's clamp makes the denominator a constant) and every path (CPU float, its fallback).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/model/unit_rows.h"

namespace xmc {
namespace {

torch::Tensor normalize(const torch::Tensor& x, double eps) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1).eps(eps));
}

/// Value and input gradient of sum(w ⊙ f(x)) for a fixed random weighting w.
std::pair<torch::Tensor, torch::Tensor> value_and_gradient(const torch::Tensor& x0, const torch::Tensor& w,
                                                           const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  const torch::Tensor x = x0.detach().clone().requires_grad_();
  const torch::Tensor y = f(x);
  (y * w).sum().backward();
  return {y.detach(), x.grad()};
}

void expect_matches_normalize(const torch::Tensor& x, double eps, double tolerance) {
  torch::manual_seed(3);
  const torch::Tensor w = torch::randn(x.sizes(), x.options());
  const auto [want_y, want_grad] = value_and_gradient(x, w, [eps](const torch::Tensor& t) { return normalize(t, eps); });
  const auto [got_y, got_grad] = value_and_gradient(x, w, [eps](const torch::Tensor& t) { return unit_rows(t, eps); });
  EXPECT_TRUE(torch::allclose(got_y, want_y, tolerance, tolerance)) << (got_y - want_y).abs().max();
  EXPECT_TRUE(torch::allclose(got_grad, want_grad, tolerance, tolerance)) << (got_grad - want_grad).abs().max();
}

TEST(UnitRows, RowsHaveUnitLengthAndPointTheSameWay) {
  // Hand-worked: (3, 4) / 5 and (0, -2) / 2.
  const torch::Tensor y = unit_rows(torch::tensor({{3.0F, 4.0F}, {0.0F, -2.0F}}));
  EXPECT_TRUE(torch::allclose(y, torch::tensor({{0.6F, 0.8F}, {0.0F, -1.0F}})));
}

TEST(UnitRows, GradientIsTheProjectionOffTheRowOverItsLength) {
  // x = (3, 4), y = (0.6, 0.8), g = (1, 0): (g − y⟨g, y⟩) / ‖x‖ = ((1, 0) − 0.6·(0.6, 0.8)) / 5 = (0.128, −0.096).
  const torch::Tensor x = torch::tensor({{3.0F, 4.0F}}).requires_grad_();
  unit_rows(x).select(1, 0).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), torch::tensor({{0.128F, -0.096F}}), 1e-6, 1e-7)) << x.grad();
}

TEST(UnitRows, MatchesNormalizeOnAHeadOutput) {
  torch::manual_seed(1);
  expect_matches_normalize(torch::randn({512, 128}), 1e-8, 1e-5);
  expect_matches_normalize(torch::randn({7, 3}, torch::kFloat64), 1e-8, 1e-12);  // the tensor-op path
}

TEST(UnitRows, RowsBelowEpsAreDividedByEpsAndTheirGradientIsScaledOnly) {
  // Rows: ordinary, all zeros, of length 1e-3 (below eps 1e-2), and a row of length exactly 2·eps.
  const torch::Tensor x = torch::tensor({{1.0, 2.0, -2.0}, {0.0, 0.0, 0.0}, {1e-3, 0.0, 0.0}, {0.0, 2e-2, 0.0}});
  for (const auto dtype : {torch::kFloat32, torch::kFloat64}) {
    expect_matches_normalize(x.to(dtype), 1e-2, dtype == torch::kFloat32 ? 1e-5 : 1e-12);
  }
  // Below eps: y = x / eps, dy/dx = I / eps.
  const torch::Tensor small = torch::tensor({{1e-3F, 0.0F}}).requires_grad_();
  const torch::Tensor y = unit_rows(small, 1e-2);
  EXPECT_TRUE(torch::allclose(y.detach(), torch::tensor({{0.1F, 0.0F}})));
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(small.grad(), torch::tensor({{100.0F, 100.0F}}))) << small.grad();
}

TEST(UnitRows, NonContiguousInputAndOneThread) {
  torch::manual_seed(2);
  const torch::Tensor wide = torch::randn({64, 40});
  expect_matches_normalize(wide.t(), 1e-8, 1e-5);       // [40 × 64], column-major
  expect_matches_normalize(wide.narrow(1, 3, 17), 1e-8, 1e-5);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const torch::Tensor x = torch::randn({300, 96});
  const torch::Tensor one = unit_rows(x);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, unit_rows(x))) << "a row's result does not depend on the thread count";
}

TEST(UnitRows, RefusesAnythingButAMatrix) {
  EXPECT_THROW(unit_rows(torch::ones({3})), c10::Error);
  EXPECT_THROW(unit_rows(torch::ones({2, 3, 4})), c10::Error);
}

}  // namespace
}  // namespace xmc
