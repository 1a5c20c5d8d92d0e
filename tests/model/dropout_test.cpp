#include "engine/model/dropout.h"

#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace xmc {
namespace {

constexpr std::int64_t kCount = 1'000'000;

/// |observed − expected| within 5 standard deviations of a binomial proportion over `n` trials.
void expect_proportion(double observed, double expected, std::int64_t n, const char* what) {
  const double sigma = std::sqrt(expected * (1.0 - expected) / static_cast<double>(n));
  EXPECT_LT(std::abs(observed - expected), 5.0 * sigma) << what << ": " << observed << " against " << expected;
}

TEST(Dropout, MaskDropsAFractionPAndScalesTheRestByOneOverOneMinusP) {
  for (const double p : {0.1, 0.5, 0.9}) {
    const torch::Tensor mask = dropout_mask(42, kCount, p, torch::kDouble);
    const torch::Tensor dropped = mask.eq(0);
    expect_proportion(dropped.to(torch::kDouble).mean().item<double>(), p, kCount, "dropped fraction");
    // Every kept value is exactly 1/(1-p): the mask takes two values only.
    EXPECT_TRUE(mask.masked_select(dropped.logical_not()).eq(1.0 / (1.0 - p)).all().item<bool>()) << "p = " << p;
  }
}

TEST(Dropout, DrawsOfNeighbouringElementsAreIndependent) {
  // For independent draws, both of a pair (i, i + lag) are dropped with probability p².
  const double p = 0.3;
  const torch::Tensor dropped = dropout_mask(7, kCount, p, torch::kFloat).eq(0).to(torch::kDouble);
  for (const std::int64_t lag : {1, 2, 32, 1000}) {
    const std::int64_t pairs = kCount - lag;
    const double both = (dropped.slice(0, 0, pairs) * dropped.slice(0, lag)).mean().item<double>();
    expect_proportion(both, p * p, pairs, "both dropped");
  }
}

TEST(Dropout, SeedsGiveIndependentMasks) {
  // Two masks from seeds 1 and 2 (nearby seeds must not give shifted copies of one stream) disagree on a
  // fraction 2p(1-p) of elements; the same seed gives the same mask.
  const double p = 0.5;
  const torch::Tensor a = dropout_mask(1, kCount, p, torch::kFloat);
  const torch::Tensor b = dropout_mask(2, kCount, p, torch::kFloat);
  expect_proportion(a.ne(b).to(torch::kDouble).mean().item<double>(), 2 * p * (1 - p), kCount, "disagreement");
  const torch::Tensor shifted_overlap = a.slice(0, 1).ne(b.slice(0, 0, kCount - 1)).to(torch::kDouble).mean();
  expect_proportion(shifted_overlap.item<double>(), 2 * p * (1 - p), kCount - 1, "disagreement shifted by one");
  EXPECT_TRUE(torch::equal(a, dropout_mask(1, kCount, p, torch::kFloat)));
}

TEST(Dropout, MaskIsTheSameWhateverTheNumberOfThreads) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const torch::Tensor one = dropout_mask(99, kCount, 0.2, torch::kFloat);
  at::set_num_threads(2);
  const torch::Tensor two = dropout_mask(99, kCount, 0.2, torch::kFloat);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, two));
}

TEST(Dropout, FollowsLibTorchsGenerator) {
  const torch::Tensor x = torch::ones({64, 128});
  torch::manual_seed(5);
  const torch::Tensor first = xmc::dropout(x, 0.25, true);
  const torch::Tensor second = xmc::dropout(x, 0.25, true);
  EXPECT_FALSE(torch::equal(first, second)) << "each call draws a new mask";
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(first, xmc::dropout(x, 0.25, true))) << "manual_seed gives the masks again";
  // A saved generator state (checkpoints, gradient caching's replays) gives the same mask again.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const torch::Tensor state = generator.get_state();
  const torch::Tensor before = xmc::dropout(x, 0.25, true);
  generator.set_state(state);
  EXPECT_TRUE(torch::equal(before, xmc::dropout(x, 0.25, true)));
}

TEST(Dropout, GradientIsTheMask) {
  // y = x · m, so dy/dx = m: with x all ones, the gradient of sum(y) equals y itself.
  const torch::Tensor x = torch::ones({300, 70}, torch::TensorOptions().dtype(torch::kDouble).requires_grad(true));
  const torch::Tensor y = xmc::dropout(x, 0.4, true);
  y.sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), y.detach()));
  EXPECT_GT(y.eq(0).sum().item<std::int64_t>(), 0);
  EXPECT_TRUE(y.masked_select(y.ne(0)).eq(1.0 / 0.6).all().item<bool>());
}

TEST(Dropout, KeepsNonContiguousInputsInPlace) {
  // A transposed view: each output element is its input element times 0 or 1/(1-p), in the input's positions.
  const torch::Tensor base = torch::arange(1, 1 + 40 * 30, torch::kFloat).view({40, 30});
  const torch::Tensor x = base.t();
  const torch::Tensor y = xmc::dropout(x, 0.5, true);
  ASSERT_EQ(y.sizes(), x.sizes());
  const torch::Tensor kept = y.ne(0);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) * 2.0));
}

TEST(Dropout, OutsideTrainingOrAtZeroItIsTheIdentity) {
  const torch::Tensor x = torch::randn({10, 10});
  EXPECT_TRUE(xmc::dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(xmc::dropout(x, 0.0, true).is_same(x));
  Dropout module(0.5);
  module->eval();
  EXPECT_TRUE(module(x).is_same(x));
  module->train();
  EXPECT_FALSE(torch::equal(module(x), x));
  EXPECT_TRUE(module->parameters().empty() && module->buffers().empty()) << "state dicts stay as they were";
  EXPECT_TRUE(xmc::dropout(x, 1.0, true).eq(0).all().item<bool>());
}

TEST(Dropout, RejectsAProbabilityOutsideZeroToOne) {
  const torch::Tensor x = torch::ones({4});
  for (const double p : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(xmc::dropout(x, p, true), std::invalid_argument) << p;
    EXPECT_THROW(Dropout{p}, std::invalid_argument) << p;
  }
}

TEST(Dropout, OtherTypesUseLibTorchsDropout) {
  // Half precision on the CPU takes LibTorch's path: still inverted dropout with the two values.
  const torch::Tensor x = torch::ones({1000}, torch::kBFloat16);
  const torch::Tensor y = xmc::dropout(x, 0.5, true);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE((y.eq(0) | y.eq(2)).all().item<bool>());
}

}  // namespace
}  // namespace xmc
