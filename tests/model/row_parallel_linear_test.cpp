// row_parallel_linear against the same product worked out in float64: values and the gradients of x, W and b,
// with the rows split over 2 and 3 threads (blocks of unequal size), with and without a bias, and its fallback.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>

#include "engine/model/row_parallel_linear.h"

namespace xmc {
namespace {

/// Sets LibTorch's intra-op threads for one test and restores them after.
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : before_(at::get_num_threads()) { at::set_num_threads(threads); }
  ~ThreadCount() { at::set_num_threads(before_); }

 private:
  int before_;
};

struct Gradients {
  torch::Tensor y, x, weight, bias;
};

/// y = f(x, W, b) and the gradients of sum(r ⊙ y) for a fixed weighting r.
Gradients run(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0, const torch::Tensor& r,
              const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>& f) {
  const torch::Tensor x = x0.detach().clone().requires_grad_();
  const torch::Tensor w = w0.detach().clone().requires_grad_();
  const torch::Tensor b = b0.defined() ? b0.detach().clone().requires_grad_() : torch::Tensor();
  const torch::Tensor y = f(x, w, b);
  (y * r.to(y.scalar_type())).sum().backward();
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

void expect_close(const torch::Tensor& got, const torch::Tensor& want, const char* what) {
  ASSERT_TRUE(got.defined()) << what;
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, 1e-4, 1e-4)) << what << ": " << (got.to(torch::kDouble) - want).abs().max();
}

void expect_matches_float64(std::int64_t rows, std::int64_t in, std::int64_t out, bool with_bias, int threads) {
  const ThreadCount thread_count(threads);
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({rows, in});
  const torch::Tensor w = torch::randn({out, in}) / std::sqrt(static_cast<double>(in));
  const torch::Tensor b = with_bias ? torch::randn({out}) : torch::Tensor();
  const torch::Tensor r = torch::randn({rows, out});
  const Gradients want = run(x.to(torch::kDouble), w.to(torch::kDouble), with_bias ? b.to(torch::kDouble) : torch::Tensor(), r,
                             [](const auto& a, const auto& c, const auto& d) { return torch::nn::functional::linear(a, c, d); });
  const Gradients got = run(x, w, b, r, [](const auto& a, const auto& c, const auto& d) { return row_parallel_linear(a, c, d); });
  expect_close(got.y, want.y, "y");
  expect_close(got.x, want.x, "dx");
  expect_close(got.weight, want.weight, "dW");
  if (with_bias) expect_close(got.bias, want.bias, "db");
}

TEST(RowParallelLinear, TwiceTheIdentityPlusOneHasTheGradientsWorkedByHand) {
  // W = 2I, b = 1: y = 2x + 1. For sum(y): dx = 1·W = 2 everywhere, dW[o][i] = Σ_n x[n][i] for every o, db = n.
  const ThreadCount thread_count(2);
  const std::int64_t n = 301, d = 128;  // 301·128·128 multiply-adds: enough to split, and odd
  const torch::Tensor x = torch::arange(n * d, torch::kFloat).remainder(7).sub(3).view({n, d});
  const Gradients got = run(x, 2 * torch::eye(d), torch::ones({d}), torch::ones({n, d}),
                            [](const auto& a, const auto& c, const auto& e) { return row_parallel_linear(a, c, e); });
  EXPECT_TRUE(torch::equal(got.y, 2 * x + 1));
  EXPECT_TRUE(torch::equal(got.x, torch::full({n, d}, 2.0F)));
  EXPECT_TRUE(torch::equal(got.weight, x.sum(0).expand({d, d})));
  EXPECT_TRUE(torch::equal(got.bias, torch::full({d}, static_cast<float>(n))));
}

TEST(RowParallelLinear, SplitOverTwoOrThreeThreadsItIsTheLinearOfFloat64) {
  expect_matches_float64(512, 256, 256, /*with_bias=*/true, 2);
  expect_matches_float64(301, 128, 192, /*with_bias=*/true, 3);
  expect_matches_float64(301, 192, 128, /*with_bias=*/false, 2);
}

TEST(RowParallelLinear, SmallProductsAndOneThreadTakeTorchsLinear) {
  expect_matches_float64(5, 4, 3, /*with_bias=*/true, 2);
  expect_matches_float64(512, 256, 256, /*with_bias=*/true, 1);
}

TEST(RowParallelLinear, InsideAParallelRegionItStaysOnItsThread) {
  const ThreadCount thread_count(2);
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({512, 256}), w = torch::randn({256, 256}), b = torch::randn({256});
  torch::Tensor inside[2];
  at::parallel_for(0, 2, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t part = begin; part < end; ++part) inside[part] = row_parallel_linear(x, w, b);
  });
  const torch::Tensor want = torch::nn::functional::linear(x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble));
  for (const torch::Tensor& y : inside) expect_close(y, want, "y");
}

}  // namespace
}  // namespace xmc
