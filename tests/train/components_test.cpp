// Pieces of the training loop on hand-worked cases: label pools, batches, schedules, gradient caching.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/loss/loss_entry.h"
#include "engine/method/xmc_model.h"
#include "engine/model/bow/bow_encoder.h"
#include "engine/model/bow/bow_options.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/encoder_options.h"
#include "engine/sampler/label_pool.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/optim/fused_adamw.h"
#include "engine/optim/gradient_clipping.h"
#include "engine/optim/sparse_gradient.h"
#include "engine/train/step_prefetcher.h"
#include "engine/model/table_rows.h"
#include "engine/method/grad_cache.h"
#include "engine/model/random_state.h"
#include "tests/support/grad_cache_case.h"
#include "tests/support/test_support.h"
#include "engine/optim/lr_schedule.h"

namespace xmc {

TEST(LabelPool, SampledPositivesAreEveryonesNegativesAndTheMaskKnowsAllPositives) {
  // Query 0: labels {1, 2}; query 1: {2}; query 2: {5}.
  const CsrMatrix labels = csr_from_rows({{1, 2}, {2}, {5}}, 6);
  std::mt19937_64 rng(3);
  const std::vector<std::int64_t> batch{0, 1, 2};
  const LabelPool pool = build_label_pool(labels, batch, rng, {});
  // One positive per query, deduplicated: query 1 and 2 have one choice each.
  std::set<std::int64_t> pool_set(pool.labels.begin(), pool.labels.end());
  EXPECT_TRUE(pool_set.count(2) && pool_set.count(5));
  EXPECT_LE(pool.labels.size(), 3u);
  for (std::size_t j = 0; j < pool.labels.size(); ++j) {
    const auto l = pool.labels[j];
    EXPECT_EQ(pool.positive_mask[0][static_cast<std::int64_t>(j)].item<bool>(), l == 1 || l == 2);
    EXPECT_EQ(pool.positive_mask[1][static_cast<std::int64_t>(j)].item<bool>(), l == 2);
    EXPECT_EQ(pool.positive_mask[2][static_cast<std::int64_t>(j)].item<bool>(), l == 5);
  }
  const LabelPool everything = build_label_pool(labels, batch, rng, {.all_positives = true});
  EXPECT_EQ(std::set<std::int64_t>(everything.labels.begin(), everything.labels.end()), (std::set<std::int64_t>{1, 2, 5}));
  const LabelPool all = build_label_pool(labels, batch, rng, {.all_labels = true});
  EXPECT_EQ(all.labels.size(), 6u);
  EXPECT_EQ(all.positive_mask.sum().item<std::int64_t>(), 4);
}

TEST(LabelPool, HardNegativesComeFromTheShortlist) {
  const CsrMatrix labels = csr_from_rows({{0}, {1}}, 10);
  torch::Tensor shortlist = torch::tensor({7, 8, 9, 6, 5, 4}, torch::kInt64).view({2, 3});
  std::mt19937_64 rng(5);
  const LabelPool pool = build_label_pool(labels, std::vector<std::int64_t>{0, 1}, rng, {.hard_per_query = 3}, shortlist);
  EXPECT_EQ(std::set<std::int64_t>(pool.labels.begin(), pool.labels.end()), (std::set<std::int64_t>{0, 1, 4, 5, 6, 7, 8, 9}));
}

std::vector<std::int64_t> rows_0_to(int n) {
  std::vector<std::int64_t> q(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) q[static_cast<std::size_t>(i)] = i;
  return q;
}

TrainConfig clustered_batches(std::int64_t cluster_size, std::int64_t start_epoch, std::int64_t refresh_every, std::vector<std::int64_t> grow_at) {
  TrainConfig c;
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>() = {.cluster_size = cluster_size, .start_epoch = start_epoch, .refresh_every = refresh_every, .grow_at = std::move(grow_at)};
  return c;
}

TEST(QueryBatcher, CurriculumAndPartition) {
  QueryBatcher batcher(make_batch_order(component_config(clustered_batches(2, 1, 2, {3}))), 8, rows_0_to(32), 9);
  // C: 1 (random) before epoch 1, 2 from it, doubled at epoch 3; fresh clusters at 1, then every 2 epochs or when C changes.
  EXPECT_FALSE(batcher.needs_embeddings(0));
  EXPECT_TRUE(batcher.needs_embeddings(1));
  EXPECT_EQ(batcher.refresh_phase(1), "clustering queries (C = 2)");
  EXPECT_EQ(batcher.refresh_phase(3), "clustering queries (C = 4)");
  // Two well-separated groups of queries: clustered batches never mix them when C divides the batch.
  torch::Tensor embeddings = torch::zeros({32, 2});
  for (int i = 0; i < 32; ++i) embeddings[i][i < 16 ? 0 : 1] = 1.0f;
  for (std::int64_t epoch : {0, 1, 2, 3}) {
    const bool fresh = batcher.needs_embeddings(epoch);
    EXPECT_EQ(fresh, epoch == 1 || epoch == 3) << epoch;
    const auto batches = batcher.epoch_batches(epoch, fresh ? embeddings : torch::Tensor());
    std::multiset<std::int64_t> seen;
    for (const auto& b : batches) seen.insert(b.begin(), b.end());
    EXPECT_EQ(seen.size(), 32u);
    EXPECT_EQ(std::set<std::int64_t>(seen.begin(), seen.end()).size(), 32u);
    if (epoch >= 1) {
      // Clusters of 2 (4 from epoch 3) from the same group; a batch of 8 holds whole clusters, so none straddles groups.
      for (const auto& b : batches)
        for (std::size_t i = 0; i + 1 < b.size(); i += 2) EXPECT_EQ(b[i] < 16, b[i + 1] < 16) << epoch;
    }
  }
  // The checkpointed state (stream and clusters) continues the same batches in a new batcher.
  QueryBatcher resumed(make_batch_order(component_config(clustered_batches(2, 1, 2, {3}))), 8, rows_0_to(32), 1234);
  resumed.load_state(batcher.save_state());
  EXPECT_FALSE(resumed.needs_embeddings(4)) << "the clusters came with the state";
  EXPECT_EQ(resumed.epoch_batches(4), batcher.epoch_batches(4));
}

// Batch orders are registered by name; a random run's checkpoint of the old layout (stream, then "0 0": no
// clusters) loads into either order, and a damaged one is refused.
TEST(QueryBatcher, OrdersByNameAndStatesOfEitherOrderLoad) {
  TrainConfig random;
  EXPECT_EQ(random.get<QueryBatcherOptions>().type, "random");
  QueryBatcher a(make_batch_order(component_config(random)), 4, rows_0_to(10), 5), b(make_batch_order(component_config(random)), 4, rows_0_to(10), 5);
  EXPECT_FALSE(a.needs_embeddings(0));
  EXPECT_EQ(a.epoch_batches(0), b.epoch_batches(0)) << "the same seed, the same shuffle";
  std::ostringstream stream;
  std::mt19937_64 fresh(77);
  stream << fresh << "\n0 0\n";
  for (const TrainConfig& config : {random, clustered_batches(2, 0, 1, {})}) {
    QueryBatcher loaded(make_batch_order(component_config(config)), 4, rows_0_to(10), 1);
    EXPECT_NO_THROW(loaded.load_state(stream.str()));
    EXPECT_THROW(loaded.load_state("not a random state"), Error);
  }
  QueryBatcher clustered(make_batch_order(component_config(clustered_batches(2, 0, 1, {}))), 4, rows_0_to(10), 1);
  EXPECT_THROW(clustered.load_state(stream.str().substr(0, stream.str().size() - 4) + "2 1\n3 0 1 99\n"), Error) << "row 99 is no query";
  TrainConfig unknown;
  unknown.edit<QueryBatcherOptions>().type = "curriculum";
  EXPECT_THROW(make_batch_order(component_config(unknown)), ConfigError);
}

// AdamW's first step from zero moments moves each weight by lr·g/(|g| + eps) after the decay: m̂ = g and
// √v̂ = |g| (bias corrections 1-β1 and 1-β2 cancel the (1-β) factors).
TEST(FusedAdamW, TheFirstStepMovesEachWeightByLrTimesTheGradientsSign) {
  torch::Tensor w = torch::tensor({1.0f, -2.0f, 0.5f, 3.0f, 0.0f}).requires_grad_();
  w.mutable_grad() = torch::tensor({0.3f, -4.0f, 1e-3f, -0.02f, 5.0f});
  FusedAdamW optimizer({w}, torch::optim::AdamWOptions(0.1).weight_decay(0.5).eps(1e-8));
  optimizer.step();
  const std::vector<float> start{1.0f, -2.0f, 0.5f, 3.0f, 0.0f}, grad{0.3f, -4.0f, 1e-3f, -0.02f, 5.0f};
  for (std::int64_t i = 0; i < 5; ++i) {
    const double g = grad[static_cast<std::size_t>(i)];
    const double expected = start[static_cast<std::size_t>(i)] * (1 - 0.1 * 0.5) - 0.1 * g / (std::abs(g) + 1e-8);
    EXPECT_NEAR(w[i].item<double>(), expected, 1e-6) << i;
  }
}

// The one-pass update against LibTorch's AdamW: groups with their own lr and weight decay, a size that is not
// a multiple of the vector width, a parameter without a gradient, several steps; and the state it leaves is
// LibTorch's (saved by one, loaded by the other, the steps go on alike).
TEST(FusedAdamW, MatchesLibTorchsAdamWAndSharesItsState) {
  torch::manual_seed(3);
  auto make = [] {
    // The last two take LibTorch's arithmetic in the fused optimiser too: float64, and a group with amsgrad.
    std::vector<torch::Tensor> params{torch::randn({1000, 17}), torch::randn({7}), torch::randn({3, 5}), torch::randn({4}),
                                      torch::randn({6}, torch::kFloat64), torch::randn({5})};
    for (auto& p : params) p.requires_grad_();
    return params;
  };
  std::vector<torch::Tensor> a = make(), b;
  for (const auto& p : a) b.push_back(p.detach().clone().requires_grad_());
  auto groups = [](const std::vector<torch::Tensor>& p) {
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{p[0], p[1]}, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(3e-3).weight_decay(0.01)));
    g.emplace_back(std::vector<torch::Tensor>{p[2], p[3], p[4]}, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(0.05).weight_decay(0)));
    g.emplace_back(std::vector<torch::Tensor>{p[5]}, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(0.02).amsgrad(true)));
    return g;
  };
  FusedAdamW fused(groups(a), torch::optim::AdamWOptions(1e-3));
  torch::optim::AdamW plain(groups(b), torch::optim::AdamWOptions(1e-3));
  auto step_both = [&](int steps) {
    for (int s = 0; s < steps; ++s) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i == 3 && s % 2 == 0) {  // no gradient this step: left alone by both
          a[i].mutable_grad().reset();
          b[i].mutable_grad().reset();
          continue;
        }
        const torch::Tensor g = torch::randn(a[i].sizes(), a[i].options()) * (s + 1);
        a[i].mutable_grad() = g.clone();
        b[i].mutable_grad() = g.clone();
      }
      fused.step();
      plain.step();
    }
  };
  step_both(6);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << i;

  // LibTorch's saved state continues in the fused optimiser, and the other way round.
  std::stringstream from_plain, from_fused;
  {
    torch::serialize::OutputArchive out;
    plain.save(out);
    out.save_to(from_plain);
  }
  {
    torch::serialize::OutputArchive out;
    fused.save(out);
    out.save_to(from_fused);
  }
  torch::serialize::InputArchive in_fused, in_plain;
  in_fused.load_from(from_plain);
  in_plain.load_from(from_fused);
  fused.load(in_fused);
  plain.load(in_plain);
  step_both(3);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-6)) << i;
}

// Tensors that take LibTorch's arithmetic (float64 here; every tensor on a GPU) are updated together with the
// multi-tensor kernels, batched by step count: a tensor that skipped steps (so its bias corrections differ) and
// one joining late must come out as LibTorch's AdamW leaves them, to the last bit of float64 rounding.
TEST(FusedAdamW, TensorsUpdatedTogetherMatchLibTorchsAdamWTensorByTensor) {
  torch::manual_seed(11);
  std::vector<torch::Tensor> a{torch::randn({40, 3}, torch::kFloat64), torch::randn({9}, torch::kFloat64), torch::randn({2, 2, 2}, torch::kFloat64),
                               torch::randn({5}, torch::kFloat64)};
  std::vector<torch::Tensor> b;
  for (auto& p : a) {
    p.requires_grad_();
    b.push_back(p.detach().clone().requires_grad_());
  }
  const auto options = torch::optim::AdamWOptions(0.03).weight_decay(0.1).betas({0.8, 0.95}).eps(1e-7);
  FusedAdamW fused(a, options);
  torch::optim::AdamW plain(b, options);
  const torch::Tensor start = a[3].detach().clone();
  for (int s = 0; s < 7; ++s) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      const bool skips = (i == 1 && s % 3 == 0) || (i == 3 && s < 4);  // tensor 1 skips steps; tensor 3 joins at step 4
      if (skips) {
        a[i].mutable_grad().reset();
        b[i].mutable_grad().reset();
        continue;
      }
      const torch::Tensor g = torch::randn(a[i].sizes(), a[i].options());
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    fused.step();
    plain.step();
  }
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-13, 1e-15)) << i << ": " << (a[i] - b[i]).abs().max().item<double>();
  EXPECT_FALSE(torch::equal(a[3].detach(), start)) << "the late tensor moved";
}

// A row-sparse gradient (uncoalesced: rows out of order, one row twice) updates the table exactly as the dense
// gradient it stands for: the rows it names with their summed gradient, every other row with zero (its
// moments decay, its weight still moves). 5000 rows on two threads, touched rows on both sides of where the
// threads split (row 2500) and at the end. Widths 8 and 4: the same bits; 6 and 1 (lanes fall differently,
// UniDEC's bias column): close.
TEST(FusedAdamW, ARowSparseGradientUpdatesAsItsDenseTensorDoes) {
  torch::manual_seed(5);
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  constexpr std::int64_t kRows = 5000;
  for (const std::int64_t width : {8, 4, 6, 1}) {
    SCOPED_TRACE("width " + std::to_string(width));
    const torch::Tensor start = torch::randn({kRows, width});
    torch::Tensor sparse_fed = start.clone().requires_grad_(), dense_fed = start.clone().requires_grad_(),
                  plain_fed = start.clone().requires_grad_();
    const auto options = torch::optim::AdamWOptions(0.01).weight_decay(0.1);
    FusedAdamW sparse_optimizer({sparse_fed}, options), dense_optimizer({dense_fed}, options);
    torch::optim::AdamW plain_optimizer({plain_fed}, options);
    for (int step = 0; step < 5; ++step) {
      // Steps touch different rows; row 7 is named twice in step 0 and never again.
      const std::vector<std::int64_t> picked = step == 0 ? std::vector<std::int64_t>{7, 3, 2500, 7, kRows - 1, 2499}
                                                          : std::vector<std::int64_t>{3 + step, 0, 2497 + step, 20 + step, kRows - 1};
      const torch::Tensor rows = torch::tensor(picked);
      const torch::Tensor values = torch::randn({rows.size(0), width});
      const torch::Tensor sparse = torch::sparse_coo_tensor(rows.unsqueeze(0), values, {kRows, width});
      ASSERT_FALSE(sparse.is_coalesced());
      const torch::Tensor dense = torch::zeros({kRows, width}).index_add_(0, rows, values);
      sparse_fed.mutable_grad() = sparse;
      dense_fed.mutable_grad() = dense.clone();
      plain_fed.mutable_grad() = dense.clone();
      sparse_optimizer.step();
      dense_optimizer.step();
      plain_optimizer.step();
    }
    if (width % 4 == 0)
      EXPECT_TRUE(torch::equal(sparse_fed, dense_fed));
    else
      EXPECT_TRUE(torch::allclose(sparse_fed, dense_fed, 1e-6, 1e-7));
    EXPECT_TRUE(torch::allclose(sparse_fed, plain_fed, 1e-5, 1e-6));
    // Row 7 had a gradient only in step 0, row 30 never: 7 kept moving on its momentum, 30 only decayed.
    EXPECT_GT((sparse_fed[7] - start[7] * std::pow(1 - 0.01 * 0.1, 5)).abs().max().item<double>(), 1e-3);
    EXPECT_TRUE(torch::allclose(sparse_fed[30], start[30] * std::pow(1 - 0.01 * 0.1, 5), 1e-6, 1e-7));
  }
  at::set_num_threads(threads);
}

// Lazy rows, worked by hand (lr 0.1, weight decay 0.5, β 0.9 / 0.999, eps 1e-8): step 1 gives rows 0 and 1 the
// gradient [2, -1], step 2 row 1 only, [1, 1]. Row 0 keeps what step 1 made of it; row 1 takes both steps with
// the bias corrections of steps 1 and 2; rows 2 and 3 never move (without lazy rows they would decay). The same
// from a row-sparse gradient and from a dense one whose untouched rows are zero.
TEST(FusedAdamW, LazyRowsOnlyUpdateTheRowsAStepTouched) {
  const double lr = 0.1, wd = 0.5, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  // One coordinate through the steps it has gradients in, as AdamW's formulas say.
  auto by_hand = [&](double p, const std::vector<std::pair<int, double>>& grads) {  // (step, gradient)
    double m = 0, v = 0;
    for (const auto& [t, g] : grads) {
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      p = p * (1 - lr * wd) - lr / (1 - std::pow(b1, t)) * m / (std::sqrt(v) / std::sqrt(1 - std::pow(b2, t)) + eps);
    }
    return p;
  };
  // float64 takes the tensor-op path a GPU takes, float32 the fused one.
  for (const auto dtype : {torch::kFloat32, torch::kFloat64})
  for (const bool sparse : {true, false}) {
    SCOPED_TRACE(std::string(sparse ? "row-sparse gradients, " : "dense gradients, ") + (dtype == torch::kFloat32 ? "float32" : "float64"));
    const torch::Tensor start = torch::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}, {7.0, 8.0}}, dtype);
    torch::Tensor table = start.clone().requires_grad_();
    FusedAdamW optimizer({table}, torch::optim::AdamWOptions(lr).weight_decay(wd));
    optimizer.update_rows_lazily(table);
    auto give = [&](std::vector<std::int64_t> rows, std::vector<float> row_gradient) {
      const torch::Tensor values = torch::tensor(row_gradient).to(dtype).repeat({static_cast<std::int64_t>(rows.size()), 1});
      const torch::Tensor index = torch::tensor(rows);
      table.mutable_grad() = sparse ? torch::sparse_coo_tensor(index.unsqueeze(0), values, {4, 2})
                                    : torch::zeros({4, 2}, dtype).index_copy_(0, index, values);
      optimizer.step();
    };
    give({0, 1}, {2.0F, -1.0F});
    give({1}, {1.0F, 1.0F});
    const float expected[4][2] = {{static_cast<float>(by_hand(1, {{1, 2}})), static_cast<float>(by_hand(2, {{1, -1}}))},
                                  {static_cast<float>(by_hand(3, {{1, 2}, {2, 1}})), static_cast<float>(by_hand(4, {{1, -1}, {2, 1}}))},
                                  {5, 6},
                                  {7, 8}};
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 2; ++c) EXPECT_NEAR(table[r][c].item<double>(), expected[r][c], 1e-6) << "row " << r << " column " << c;
  }
}

// Deferred rows give dense AdamW's result: 60 rows x 8, 400 steps of row-sparse gradients on a few rows each
// (some rows rest for hundreds of steps, two are never touched), a learning rate changing every step and weight
// decay; once brought up to date (also once midway), the table and both moments match a dense optimiser's that
// updated every row every step, up to eps's share (gradients of order 1 here).
TEST(FusedAdamW, DeferredRowsEndWhereDenseAdamWDoes) {
  torch::manual_seed(11);
  const std::int64_t rows = 60, width = 8, steps = 600;  // rests past the catch-up's horizon (263 steps) after step 150
  const torch::Tensor start = torch::randn({rows, width});
  torch::Tensor dense_table = start.clone().requires_grad_(), deferred_table = start.clone().requires_grad_();
  const auto options = torch::optim::AdamWOptions(0.01).weight_decay(0.3);
  FusedAdamW dense({dense_table}, options), deferred({deferred_table}, options);
  deferred.defer_untouched_rows(deferred_table);
  std::mt19937_64 rng(4);
  for (std::int64_t step = 1; step <= steps; ++step) {
    std::vector<std::int64_t> touched;
    for (std::int64_t r = 0; r < rows - 4; ++r)  // row r is touched with probability 1/(r+1): row 0 always, row 55 rarely
      if (rng() % static_cast<std::uint64_t>(r + 1) == 0) touched.push_back(r);
    if (step == 160 || step == 500) touched.push_back(rows - 4);  // rests 340 steps, then 100
    if (step == 160) touched.push_back(rows - 3);                 // rests the last 440 steps
    const torch::Tensor index = torch::tensor(touched).unsqueeze(0);
    const torch::Tensor values = torch::randn({static_cast<std::int64_t>(touched.size()), width});
    for (FusedAdamW* optimizer : {&dense, &deferred}) {
      static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[0].options()).lr(0.01 * (1.0 + std::sin(0.05 * static_cast<double>(step))));
      torch::Tensor& table = optimizer == &dense ? dense_table : deferred_table;
      table.mutable_grad() = torch::sparse_coo_tensor(index, values, {rows, width});
      optimizer->step();
    }
    if (step == 150) deferred.bring_rows_up_to_date();
  }
  EXPECT_FALSE(torch::allclose(dense_table, deferred_table, 0, 1e-4)) << "before being brought up to date, resting rows lag behind";
  deferred.bring_rows_up_to_date();
  EXPECT_TRUE(torch::allclose(deferred_table, dense_table, 1e-4, 1e-5)) << (deferred_table - dense_table).abs().max().item<double>();
  const auto moments = [](FusedAdamW& optimizer) {
    auto& state = static_cast<torch::optim::AdamWParamState&>(*optimizer.state().begin()->second);
    return std::make_pair(state.exp_avg(), state.exp_avg_sq());
  };
  const auto [dense_m, dense_v] = moments(dense);
  const auto [deferred_m, deferred_v] = moments(deferred);
  EXPECT_TRUE(torch::allclose(deferred_m, dense_m, 1e-4, 1e-7));
  EXPECT_TRUE(torch::allclose(deferred_v, dense_v, 1e-4, 1e-9));
  // The two rows never touched only decayed: start · Π (1 − lr_t · wd).
  double decay = 1;
  for (std::int64_t step = 1; step <= steps; ++step) decay *= 1 - 0.3 * 0.01 * (1.0 + std::sin(0.05 * static_cast<double>(step)));
  EXPECT_TRUE(torch::allclose(deferred_table.narrow(0, rows - 2, 2), start.narrow(0, rows - 2, 2) * decay, 1e-5, 1e-6));
}

// A second moment per row (FBGEMM's partial row-wise Adam), deferred: against the same optimiser written out in
// float64 with every row updated every step (v_r ← β2·v_r + (1−β2)·mean_e g², m ← β1·m + (1−β1)·g,
// p ← p·(1 − lr·wd) − lr/bc1 · m / (√v_r/√bc2 + eps)), 6 rows x 4 over 40 steps, rows touched at random. With a
// bfloat16 first moment the state takes 2 bytes an element and follows the same optimiser to bfloat16's
// precision: each store rounds m by at most 2^-9 of itself, and the momentum carries each such error on with a
// factor β1 a step, so m is off by at most b_t = β1·b_{t−1} + 2^-9·|m_t| (2^-8 below, for float32's own rounding).
static void expect_partial_row_wise_adam(bool bfloat16_first_moment) {
  torch::manual_seed(12);
  const std::int64_t rows = 6, width = 4, steps = 40;
  const double lr = 0.02, wd = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const torch::Tensor start = torch::randn({rows, width});
  torch::Tensor table = start.clone().requires_grad_();
  FusedAdamW optimizer({table}, torch::optim::AdamWOptions(lr).weight_decay(wd));
  optimizer.defer_untouched_rows(table, {.second_moment_per_row = true, .bfloat16_first_moment = bfloat16_first_moment});
  std::vector<double> p(start.data_ptr<float>(), start.data_ptr<float>() + rows * width), m(rows * width, 0.0), v(rows, 0.0);
  std::vector<double> m_bound(rows * width, 0.0);
  std::mt19937_64 rng(8);
  for (std::int64_t t = 1; t <= steps; ++t) {
    std::vector<std::int64_t> touched;
    for (std::int64_t r = 0; r < rows; ++r)
      if (rng() % 3 == 0) touched.push_back(r);
    if (touched.empty()) touched.push_back(0);
    const torch::Tensor values = torch::randn({static_cast<std::int64_t>(touched.size()), width});
    table.mutable_grad() = torch::sparse_coo_tensor(torch::tensor(touched).unsqueeze(0), values, {rows, width});
    optimizer.step();
    std::vector<double> g(rows * width, 0.0);
    for (std::size_t k = 0; k < touched.size(); ++k)
      for (std::int64_t e = 0; e < width; ++e) g[touched[k] * width + e] = values[static_cast<std::int64_t>(k)][e].item<double>();
    for (std::int64_t r = 0; r < rows; ++r) {
      double squares = 0;
      for (std::int64_t e = 0; e < width; ++e) squares += g[r * width + e] * g[r * width + e];
      v[r] = b2 * v[r] + (1 - b2) * squares / width;
      for (std::int64_t e = 0; e < width; ++e) {
        double& mi = m[r * width + e];
        mi = b1 * mi + (1 - b1) * g[r * width + e];
        m_bound[r * width + e] = b1 * m_bound[r * width + e] + std::ldexp(std::abs(mi), -8);
        p[r * width + e] = p[r * width + e] * (1 - lr * wd) -
                           lr / (1 - std::pow(b1, t)) * mi / (std::sqrt(v[r]) / std::sqrt(1 - std::pow(b2, t)) + eps);
      }
    }
  }
  optimizer.bring_rows_up_to_date();
  auto& state = static_cast<torch::optim::AdamWParamState&>(*optimizer.state().begin()->second);
  EXPECT_EQ(state.exp_avg_sq().sizes(), (std::vector<std::int64_t>{rows, 1})) << "one second moment per row";
  EXPECT_EQ(state.exp_avg().scalar_type(), bfloat16_first_moment ? torch::kBFloat16 : torch::kFloat32);
  EXPECT_EQ(state.exp_avg().element_size(), bfloat16_first_moment ? 2 : 4);
  // p moves by ~lr·m/√v a step: m's error of ≤ 2 % moves it by ≤ 4e-4 a step, mostly cancelling.
  const double p_tolerance = bfloat16_first_moment ? 2e-3 : 1e-5;
  for (std::int64_t r = 0; r < rows; ++r) {
    EXPECT_NEAR(state.exp_avg_sq()[r][0].item<double>(), v[r], 1e-6 * v[r] + 1e-12) << "row " << r;
    for (std::int64_t e = 0; e < width; ++e) {
      EXPECT_NEAR(table[r][e].item<double>(), p[r * width + e], p_tolerance) << "row " << r << " column " << e;
      const double mi = m[r * width + e];
      EXPECT_NEAR(state.exp_avg()[r][e].item<double>(), mi, (bfloat16_first_moment ? m_bound[r * width + e] : 0.0) + 1e-6)
          << "row " << r << " column " << e;
    }
  }
}

TEST(FusedAdamW, ARowWiseSecondMomentFollowsPartialRowWiseAdam) { expect_partial_row_wise_adam(false); }

TEST(FusedAdamW, ABfloat16FirstMomentFollowsItToBfloat16Precision) { expect_partial_row_wise_adam(true); }

// Worked by hand: a sparse gradient whose row 1 arrives in two entries, [3, 0] and [1, 0] (so [4, 0]), and a
// dense [0, 3]: together a norm of 5, not √(9 + 1 + 9) as the stored entries would say.
TEST(GradientClipping, TakesARowSparseGradientAsItsSummedRows) {
  auto make = [] {
    torch::Tensor table = torch::zeros({3, 2}).requires_grad_(), bias = torch::zeros({2}).requires_grad_();
    table.mutable_grad() = torch::sparse_coo_tensor(torch::tensor({{1, 1}}), torch::tensor({{3.f, 0.f}, {1.f, 0.f}}), {3, 2});
    bias.mutable_grad() = torch::tensor({0.f, 3.f});
    return std::vector<torch::Tensor>{table, bias};
  };
  std::vector<torch::Tensor> loose = make();
  EXPECT_NEAR(clip_gradient_norm(loose, 10.0).item<double>(), 5.0, 1e-6);  // under the limit: left as they are
  EXPECT_TRUE(torch::allclose(loose[0].grad().to_dense(), torch::tensor({{0.f, 0.f}, {4.f, 0.f}, {0.f, 0.f}})));
  EXPECT_TRUE(torch::allclose(loose[1].grad(), torch::tensor({0.f, 3.f})));

  std::vector<torch::Tensor> tight = make();
  EXPECT_NEAR(clip_gradient_norm(tight, 1.0).item<double>(), 5.0, 1e-6);
  EXPECT_TRUE(torch::allclose(tight[0].grad().to_dense(), torch::tensor({{0.f, 0.f}, {0.8f, 0.f}, {0.f, 0.f}}), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(tight[1].grad(), torch::tensor({0.f, 0.6f}), 1e-6, 1e-6));
}

// A gradient whose rows are ascending and distinct is only marked coalesced (its values are not copied); one
// whose rows are not (out of order, or repeated) is summed and sorted.
TEST(SparseGradient, RowsAlreadyInOrderAreOnlyMarkedOthersAreSummed) {
  const torch::Tensor in_order = torch::sparse_coo_tensor(torch::tensor({{1, 4, 6}}), torch::tensor({{1.f}, {2.f}, {3.f}}), {8, 1});
  ASSERT_FALSE(in_order.is_coalesced());
  const torch::Tensor marked = coalesced(in_order);
  EXPECT_TRUE(marked.is_coalesced());
  EXPECT_EQ(marked._values().data_ptr(), in_order._values().data_ptr());
  const torch::Tensor repeated = torch::sparse_coo_tensor(torch::tensor({{6, 1, 6}}), torch::tensor({{1.f}, {2.f}, {3.f}}), {8, 1});
  const torch::Tensor summed = coalesced(repeated);
  EXPECT_TRUE(summed.is_coalesced());
  EXPECT_TRUE(torch::equal(summed._indices(), torch::tensor({{1, 6}})));
  EXPECT_TRUE(torch::equal(summed._values(), torch::tensor({{2.f}, {4.f}})));
}

// Rows of a trained CPU table come with a row-sparse gradient naming only the picked rows, once each; a row
// picked twice gets both contributions. Worked by hand: out = rows {2, 0, 2}, loss = Σ c_i · out_i with c = (1, 2, 3).
TEST(TableRows, PickedRowsGetARowSparseGradient) {
  const torch::Tensor table = torch::arange(12, torch::kFloat32).view({4, 3}).requires_grad_();
  const torch::Tensor out = table_rows(table, torch::tensor({2, 0, 2}));
  EXPECT_TRUE(torch::equal(out, torch::tensor({{6.f, 7.f, 8.f}, {0.f, 1.f, 2.f}, {6.f, 7.f, 8.f}})));
  (out * torch::tensor({1.f, 2.f, 3.f}).unsqueeze(1)).sum().backward();
  ASSERT_TRUE(table.grad().is_sparse());
  EXPECT_TRUE(torch::equal(table.grad().to_dense(), torch::tensor({{2.f, 2.f, 2.f}, {0.f, 0.f, 0.f}, {4.f, 4.f, 4.f}, {0.f, 0.f, 0.f}})));
  EXPECT_EQ(table.grad()._nnz(), 2);
}

/// A prepared batch that records the first draw its preparation made from the label-pool stream.
struct DrawnBatch final : PreparedBatch {
  std::uint64_t draw = 0;
};

TEST(StepPrefetcher, ABatchDroppedBeforeItTrainsLeavesTheLabelPoolStreamAsItWas) {
  std::mt19937_64 rng(7);
  std::mt19937_64 reference(7);
  const std::uint64_t first = reference();
  const std::uint64_t second = reference();
  StepPrefetcher prefetcher(rng);
  auto draw = [&rng] {
    auto b = std::make_shared<DrawnBatch>();
    b->draw = rng();
    return std::shared_ptr<PreparedBatch>(b);
  };
  // Prepared ahead and taken: the step sees the draw, the stream has moved on.
  prefetcher.start(3, draw);
  const auto taken = prefetcher.take(3);
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(dynamic_cast<const DrawnBatch&>(*taken).draw, first);
  // Prepared, then dropped (a checkpoint came first): the stream is back before that draw, so preparing the
  // batch again draws the same number.
  prefetcher.start(4, draw);
  prefetcher.drop();
  EXPECT_FALSE(prefetcher.in_flight());
  prefetcher.start(4, draw);
  EXPECT_EQ(prefetcher.take(5), nullptr) << "another batch's preparation is not handed out";
  prefetcher.start(4, draw);
  EXPECT_EQ(dynamic_cast<const DrawnBatch&>(*prefetcher.take(4)).draw, second);
  // An error in the preparation surfaces where the batch is taken.
  prefetcher.start(5, []() -> std::shared_ptr<PreparedBatch> { throw Error("bow encoder: token id 9 outside the vocabulary of 5 (text 2)"); });
  EXPECT_THROW(prefetcher.take(5), Error);
}

TEST(LrSchedule, WarmupThenDecay) {
  const LrSchedule linear{.total_steps = 10, .warmup_steps = 2, .kind = "linear"};
  EXPECT_DOUBLE_EQ(linear.factor(0), 1.0 / 3);
  EXPECT_DOUBLE_EQ(linear.factor(1), 2.0 / 3);
  EXPECT_DOUBLE_EQ(linear.factor(2), 1.0);
  EXPECT_DOUBLE_EQ(linear.factor(6), 0.5);  // 4 of 8 decay steps done
  EXPECT_DOUBLE_EQ(linear.factor(10), 0.0);
  const LrSchedule cosine{.total_steps = 10, .warmup_steps = 2, .kind = "cosine"};
  EXPECT_NEAR(cosine.factor(6), 0.5, 1e-12);  // cos(pi/2) halfway
  EXPECT_NEAR(cosine.factor(4), 0.5 * (1 + std::cos(M_PI / 4)), 1e-12);
}

// The bag without its block is a linear encoder: a text is its words' vectors weighted by idf × count,
// divided by the weights' sum (mean) or by the L2 norm of the text's TF-IDF vector (l2), worked by hand.
TEST(BowEncoder, MeanAndL2BagsOfALinearEncoderWorkedByHand) {
  const std::int64_t vocab = 5;
  TokenizedCorpus texts;
  texts.append(std::vector<std::int32_t>{2, 3, 2});  // word 2 twice, word 3 once
  texts.append(std::vector<std::int32_t>{4, 1});     // [UNK] (1) carries no weight
  for (const bool l2 : {false, true}) {
    SCOPED_TRACE(l2 ? "l2 bag" : "mean bag");
    BowEncoderOptions options;
    options.vocab_size = vocab;
    options.word_dim = 2;
    options.dim = 2;
    options.idf = {1.0f, 1.0f, 2.0f, 3.0f, 0.5f};
    options.l2_bag = l2;
    options.residual_block = false;
    options.init_std = 0.01;
    BowEncoder encoder(options);
    EXPECT_NEAR(encoder->named_parameters()["embeddings.weight"].std().item<double>(), 0.01, 0.01);
    EXPECT_EQ(encoder->parameters().size(), 1u);  // no block: the word vectors are all there is
    torch::NoGradGuard no_grad;
    encoder->named_parameters()["embeddings.weight"].copy_(torch::tensor({{0.f, 0.f}, {9.f, 9.f}, {1.f, 0.f}, {0.f, 1.f}, {2.f, 2.f}}));
    const std::vector<std::int64_t> rows{0, 1};
    const torch::Tensor out = encoder->encode(texts, rows);
    // Text 0: TF-IDF (word 2: 2·2 = 4, word 3: 3) → mean divides by 7, l2 by 5; text 1: word 4 alone.
    const torch::Tensor expected = l2 ? torch::tensor({{4.f / 5, 3.f / 5}, {2.f, 2.f}}) : torch::tensor({{4.f / 7, 3.f / 7}, {2.f, 2.f}});
    EXPECT_TRUE(torch::allclose(out, expected, 1e-6, 1e-6)) << out;
  }
}

// encoder.bag = uniform: every occurrence weighs alike (the reference script's EmbeddingBag in mean mode), so the
// bag is the plain mean of its words' vectors; the default weighs them by idf.
TEST(BowEncoder, AUniformBagWeighsEveryWordAlike) {
  test::TempDir dir;
  const std::vector<std::string> texts{"red apple", "green apple", "red pear", "apple"};
  for (const std::string bag : {"uniform", "mean"}) {
    TrainConfig config;
    config.edit<EncoderOptions>().type = "bow";
    config.edit<EncoderOptions>().dim = 2;
    config.edit<BowOptions>().bag = bag;
    config.edit<BowOptions>().block = "none";
    BuiltEncoder built = make_encoder(component_config(config), texts, dir / bag);
    const torch::Tensor idf = built.encoder->named_buffers()["idf"];
    const torch::Tensor words = idf.narrow(0, 2, idf.size(0) - 2);  // past [PAD] and [UNK]
    if (bag == "uniform") {
      EXPECT_TRUE(torch::equal(words, torch::ones_like(words))) << idf;
    } else {
      EXPECT_GT(words.max().item<float>(), words.min().item<float>() + 0.1f) << idf;  // "apple" is in three texts of four
    }
  }
}

// encoder.block = relu: the reference script's h + ReLU(W·h), W as torch initialises it, so the block is nonlinear from
// the start (the residual block starts as the identity); checked against the formula on the encoder's own weights.
TEST(BowEncoder, TheScriptsReluBlockIsTheBagPlusReluOfALinearLayer) {
  BowEncoderOptions options;
  options.vocab_size = 5;
  options.word_dim = 3;
  options.dim = 3;
  options.idf.assign(5, 1.0f);
  options.residual_block = false;
  options.relu_block = true;
  BowEncoder encoder(options);
  const auto parameters = encoder->named_parameters();
  ASSERT_TRUE(parameters.contains("relu_layer.weight"));
  const torch::Tensor w = parameters["relu_layer.weight"], bias = parameters["relu_layer.bias"], table = parameters["embeddings.weight"];
  EXPECT_GT(w.abs().sum().item<double>(), 0.0);  // not zero at the start
  TokenizedCorpus texts;
  texts.append(std::vector<std::int32_t>{2, 3});
  torch::NoGradGuard no_grad;
  const torch::Tensor bag = (table[2] + table[3]) / 2;
  const torch::Tensor expected = bag + torch::relu(torch::matmul(w, bag) + bias);
  EXPECT_TRUE(torch::allclose(encoder->encode(texts, std::vector<std::int64_t>{0}).squeeze(0), expected, 1e-5, 1e-5));
}

// The table's gradient names only the rows of the texts' words, each with its weight summed over the text's
// occurrences: d(Σ outputs)/d(word vector) = the word's weight in its bag (mean bag: word 2 4/7, word 3 3/7,
// word 4 1), whatever the word vectors are.
// Two vocabulary sizes: the call's words found through a slot per word (6) and by sorting its tokens (100).
TEST(BowEncoder, TheTablesGradientIsRowSparse) {
  for (const std::int64_t vocab : {6, 100}) {
  SCOPED_TRACE("vocabulary " + std::to_string(vocab));
  TokenizedCorpus texts;
  texts.append(std::vector<std::int32_t>{2, 3, 2});
  texts.append(std::vector<std::int32_t>{4, 1});
  BowEncoderOptions options;
  options.vocab_size = vocab;
  options.word_dim = 2;
  options.dim = 2;
  options.idf.assign(static_cast<std::size_t>(vocab), 1.0f);
  options.idf[2] = 2.0f;
  options.idf[3] = 3.0f;
  options.idf[4] = 0.5f;
  options.residual_block = false;
  BowEncoder encoder(options);
  const std::vector<std::int64_t> rows{0, 1};
  encoder->encode(texts, rows).sum().backward();
  const torch::Tensor first = encoder->named_parameters()["embeddings.weight"].grad();
  ASSERT_TRUE(first.is_sparse());
  EXPECT_TRUE(torch::equal(first.coalesce()._indices().reshape({-1}), torch::tensor({2, 3, 4})));
  EXPECT_EQ(first._nnz(), 3);  // one entry per word, not per occurrence
  encoder->encode(texts, std::vector<std::int64_t>{1}).sum().backward();  // a second call adds word 4 again
  const torch::Tensor grad = encoder->named_parameters()["embeddings.weight"].grad();
  torch::Tensor expected = torch::zeros({vocab, 2});
  expected[2] = 4.f / 7;
  expected[3] = 3.f / 7;
  expected[4] = 2.f;
  EXPECT_TRUE(torch::allclose(grad.to_dense(), expected, 1e-6, 1e-6)) << grad.to_dense();
  }
}

// A token id past the vocabulary (a corpus tokenized with another vocabulary) is refused by name, in training
// (where the encoder picks the texts' words itself) as in inference.
TEST(BowEncoder, ATokenOutsideTheVocabularyIsRefusedByItsId) {
  TokenizedCorpus texts;
  texts.append(std::vector<std::int32_t>{2, 9});
  BowEncoderOptions options;
  options.vocab_size = 5;
  options.word_dim = 2;
  options.dim = 2;
  options.idf.assign(5, 1.0f);
  BowEncoder encoder(options);
  const std::vector<std::int64_t> rows{0};
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    torch::AutoGradMode grad_mode(training);
    try {
      encoder->encode(texts, rows);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("token id 9 outside the vocabulary of 5 (text 0)"), std::string::npos) << e.what();
    }
  }
}

TEST(GradCache, GradientsEqualPlainBackpropagation) {
  test::GradCacheCase problem(torch::kCPU, /*dropout=*/0.2);
  XmcModel& model = problem.model;
  const TokenizedCorpus& queries = problem.queries;
  const TokenizedCorpus& label_corpus = problem.labels;

  const RandomState before = RandomState::of(torch::kCPU);  // the cache replays the plain computation's draws
  const auto [plain, plain_grads] = problem.plain_backward();
  before.restore();
  const auto [value, embeddings] =
      grad_cached_backward(model, queries, problem.batch, label_corpus, problem.mask, problem.loss, test::GradCacheCase::kChunk);
  EXPECT_NEAR(value, plain, 1e-6);
  const std::vector<torch::Tensor> grads = problem.gradients();
  for (std::size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(torch::allclose(grads[i], plain_grads[i], 1e-5, 1e-6)) << "parameter " << i;
  // Five label chunks and the queries added their table rows: one entry per word any of them has.
  std::set<std::int32_t> words;
  for (std::int64_t r = 0; r < queries.size(); ++r)
    for (const std::int32_t t : queries.tokens(r)) words.insert(t);
  for (std::int64_t r = 0; r < label_corpus.size(); ++r)
    for (const std::int32_t t : label_corpus.tokens(r)) words.insert(t);
  const torch::Tensor table_grad = model->named_parameters()["encoder.embeddings.weight"].grad();
  ASSERT_TRUE(table_grad.is_sparse());
  EXPECT_EQ(table_grad._nnz(), static_cast<std::int64_t>(words.size()));  // stored entries: summed as they came
}

}  // namespace xmc
