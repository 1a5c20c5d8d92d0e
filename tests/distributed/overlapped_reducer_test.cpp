// Gradients summed over Gloo ranks while backward runs (ranks as threads of one process): the sums equal the
// ranks' own gradients added up by hand, buckets start before backward ends, and a second backward in a step,
// on some ranks only, or a rank with no backward at all, still gives the right sums without a hang.
#include <gtest/gtest.h>

#include <mutex>

#include "engine/distributed/overlapped_gradient_reducer.h"
#include "tests/distributed/rank_threads.h"

namespace xmc {
namespace {

/// Three linear layers, the same weights on every rank, float64.
struct Mlp {
  std::vector<torch::Tensor> weights, biases;
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> all;
    for (std::size_t l = 0; l < weights.size(); ++l) {
      all.push_back(weights[l]);
      all.push_back(biases[l]);
    }
    return all;
  }
  torch::Tensor loss(const torch::Tensor& x) const {
    torch::Tensor h = x;
    for (std::size_t l = 0; l < weights.size(); ++l) {
      h = torch::nn::functional::linear(h, weights[l], biases[l]);
      if (l + 1 < weights.size()) h = torch::tanh(h);
    }
    return h.pow(2).sum();
  }
};

/// Fixed values, not the global random stream: the ranks are threads and would race on its seed.
torch::Tensor fixed_values(std::vector<std::int64_t> shape, double phase) {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return torch::sin(torch::arange(n, torch::kDouble) * 0.7 + phase).reshape(shape);
}

Mlp make_mlp() {
  Mlp m;
  const std::vector<std::int64_t> widths{6, 5, 4, 3};
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    m.weights.push_back(fixed_values({widths[l + 1], widths[l]}, static_cast<double>(l)).requires_grad_(true));
    m.biases.push_back(fixed_values({widths[l + 1]}, 0.5 + static_cast<double>(l)).requires_grad_(true));
  }
  return m;
}

/// Rank r's input for its `pass`-th backward of the step.
torch::Tensor input_of(int rank, int pass) {
  return torch::linspace(-1.0, 1.0, 8 * 6, torch::kDouble).reshape({8, 6}) * (1.0 + rank) + 0.3 * pass;
}

/// The gradient of every parameter after backward of `passes[r]` losses on each rank r, summed over ranks:
/// each rank's gradients computed alone, added here.
std::vector<torch::Tensor> summed_by_hand(const std::vector<int>& passes) {
  std::vector<torch::Tensor> sum;
  for (std::size_t r = 0; r < passes.size(); ++r) {
    const Mlp m = make_mlp();
    for (int pass = 0; pass < passes[r]; ++pass) m.loss(input_of(static_cast<int>(r), pass)).backward();
    const auto params = m.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor g = params[i].grad().defined() ? params[i].grad() : torch::zeros_like(params[i]);
      if (sum.size() <= i) sum.push_back(g.clone());
      else sum[i] += g;
    }
  }
  return sum;
}

/// Every rank runs passes[rank] backwards in one step through the reducer (bucket_bytes 1: one parameter per
/// bucket), agreeing on late gradients as the trainer does; returns each rank's gradients.
std::vector<std::vector<torch::Tensor>> reduce_over_ranks(const std::vector<int>& passes, bool average,
                                                          std::vector<std::size_t>* started_when_first_layer_arrived = nullptr) {
  const int world = static_cast<int>(passes.size());
  std::vector<std::vector<torch::Tensor>> grads(passes.size());
  std::mutex mutex;
  test::run_ranks(world, [&](Communicator& c) {
    const Mlp m = make_mlp();
    std::size_t started_then = 0;
    OverlappedGradientReducer* seen_by_hook = nullptr;
    // Registered before the reducer's own hooks, so it runs just before the first layer's weight joins its bucket:
    // the last gradient backward computes.
    m.weights[0].register_hook([&](const torch::Tensor&) {
      if (seen_by_hook != nullptr) started_then = seen_by_hook->buckets_started();
    });
    OverlappedGradientReducer reducer(c, m.parameters(), /*bucket_bytes=*/1);
    seen_by_hook = &reducer;
    EXPECT_EQ(reducer.bucket_count(), 6U);
    reducer.arm();
    for (int pass = 0; pass < passes[static_cast<std::size_t>(c.rank())]; ++pass) m.loss(input_of(c.rank(), pass)).backward();
    reducer.finish();
    torch::Tensor late = torch::tensor({reducer.has_late_gradients() ? 1.0 : 0.0}, torch::kDouble);
    c.all_reduce_max(late, "agreeing");
    if (late.item<double>() > 0) reducer.reduce_late();
    reducer.write_gradients(average);
    const std::lock_guard lock(mutex);
    for (const auto& p : m.parameters()) grads[static_cast<std::size_t>(c.rank())].push_back(p.grad().clone());
    if (started_when_first_layer_arrived != nullptr && c.rank() == 0) started_when_first_layer_arrived->push_back(started_then);
  });
  return grads;
}

void expect_sums(const std::vector<std::vector<torch::Tensor>>& got, const std::vector<torch::Tensor>& expected, double scale) {
  for (std::size_t r = 0; r < got.size(); ++r) {
    ASSERT_EQ(got[r].size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      EXPECT_TRUE(torch::allclose(got[r][i], expected[i] * scale, 1e-12, 1e-12)) << "rank " << r << " parameter " << i;
  }
}

TEST(OverlappedReducer, SumsAndAveragesOneBackwardPerRank) {
  const std::vector<int> passes{1, 1, 1};
  expect_sums(reduce_over_ranks(passes, /*average=*/false), summed_by_hand(passes), 1.0);
  expect_sums(reduce_over_ranks(passes, /*average=*/true), summed_by_hand(passes), 1.0 / 3.0);
}

TEST(OverlappedReducer, BucketsStartWhileBackwardRuns) {
  // Buckets hold one parameter each, in reverse order: when the first layer's weight arrives (last), the
  // buckets of layers 3 and 2 (four parameters) have started already.
  std::vector<std::size_t> started;
  reduce_over_ranks({1, 1}, /*average=*/false, &started);
  ASSERT_EQ(started.size(), 1U);
  EXPECT_GE(started[0], 4U);
}

TEST(OverlappedReducer, SecondBackwardIsReducedTooEvenOnOneRankOnly) {
  // Rank 1 runs two backwards (as gradient caching does), rank 0 one: the late gradients travel in a second
  // round that rank 0 joins with zeros.
  const std::vector<int> passes{1, 2};
  expect_sums(reduce_over_ranks(passes, /*average=*/false), summed_by_hand(passes), 1.0);
  const std::vector<int> both{2, 2};
  expect_sums(reduce_over_ranks(both, /*average=*/false), summed_by_hand(both), 1.0);
}

TEST(OverlappedReducer, RankWithoutBackwardTakesPartWithZeros) {
  // A rank whose loss was not finite skips backward: finish() starts its buckets with zeros, nobody hangs.
  const std::vector<int> passes{1, 0};
  expect_sums(reduce_over_ranks(passes, /*average=*/false), summed_by_hand(passes), 1.0);
}

TEST(OverlappedReducer, UnarmedHooksLeaveGradientsAlone) {
  test::run_ranks(2, [&](Communicator& c) {
    const Mlp m = make_mlp();
    OverlappedGradientReducer reducer(c, m.parameters(), /*bucket_bytes=*/1 << 20);
    EXPECT_EQ(reducer.bucket_count(), 1U);
    m.loss(input_of(c.rank(), 0)).backward();  // not armed: a plain local backward, no collective
    const Mlp alone = make_mlp();
    alone.loss(input_of(c.rank(), 0)).backward();
    for (std::size_t i = 0; i < m.parameters().size(); ++i) EXPECT_TRUE(torch::equal(m.parameters()[i].grad(), alone.parameters()[i].grad()));
    EXPECT_EQ(reducer.buckets_started(), 0U);
  });
}

}  // namespace
}  // namespace xmc
