// The all-label losses with the label pool split over 2-4 Gloo ranks equal the single-process losses over
// the whole pool, in value and in the gradient of every score; and the collectives they use behave.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "engine/core/error.h"
#include "engine/loss/loss_entry.h"
#include "engine/loss/sharded_losses.h"
#include "tests/distributed/rank_threads.h"

namespace xmc {
namespace {

/// Scores [B x P] in float64 with a few positives per row (row 3 without any, row 4 all-positive in the first
/// columns of some shards only), fixed by seed.
struct Problem {
  torch::Tensor scores, mask;
};

Problem make_problem(std::int64_t rows, std::int64_t labels, std::uint64_t seed) {
  torch::manual_seed(seed);
  Problem p;
  p.scores = torch::randn({rows, labels}, torch::kDouble) * 0.4;
  p.mask = torch::rand({rows, labels}, torch::kDouble) < 0.08;
  p.mask[3] = false;
  p.mask[0][labels - 1] = true;  // a positive in the last shard
  return p;
}

struct Reference {
  double value;
  torch::Tensor grad;
};

Reference single_process(const Problem& p, const LossEntry& kind, const LossOptions& options) {
  torch::Tensor s = p.scores.clone().requires_grad_(true);
  torch::Tensor loss = compute_loss(kind, s, p.mask, options);
  loss.backward();
  return {loss.item<double>(), s.grad()};
}

/// Every rank takes a contiguous column slice; returns the whole loss each rank saw and the concatenated
/// gradients of the shards.
struct ShardedRun {
  std::vector<double> values;
  torch::Tensor grad;
};

ShardedRun sharded(const Problem& p, int world, bool soft_topk, const LossOptions& options) {
  ShardedRun run;
  run.values.assign(static_cast<std::size_t>(world), 0.0);
  std::vector<torch::Tensor> grads(static_cast<std::size_t>(world));
  test::run_ranks(world, [&](Communicator& c) {
    const auto [begin, end] = shard_range(p.scores.size(1), c.rank(), c.world_size());
    torch::Tensor s = p.scores.narrow(1, begin, end - begin).clone().requires_grad_(true);
    const torch::Tensor m = p.mask.narrow(1, begin, end - begin).clone();
    ShardedLoss loss = soft_topk ? sharded_soft_topk_loss(c, s, m, options) : sharded_decoupled_softmax_loss(c, s, m, options);
    loss.part.backward();
    run.values[static_cast<std::size_t>(c.rank())] = loss.value;
    grads[static_cast<std::size_t>(c.rank())] = s.grad();
  });
  run.grad = torch::cat(grads, 1);
  return run;
}

TEST(ShardRange, CoversEveryRowOnceInRankOrder) {
  // 10 rows over 4 ranks: 3, 3, 2, 2.
  EXPECT_EQ(shard_range(10, 0, 4), (std::pair<std::int64_t, std::int64_t>{0, 3}));
  EXPECT_EQ(shard_range(10, 1, 4), (std::pair<std::int64_t, std::int64_t>{3, 6}));
  EXPECT_EQ(shard_range(10, 2, 4), (std::pair<std::int64_t, std::int64_t>{6, 8}));
  EXPECT_EQ(shard_range(10, 3, 4), (std::pair<std::int64_t, std::int64_t>{8, 10}));
  EXPECT_EQ(shard_range(1, 1, 2), (std::pair<std::int64_t, std::int64_t>{1, 1}));  // an empty shard
}

TEST(Communicator, GathersUnevenRowsReducesAndBroadcasts) {
  test::run_ranks(3, [](Communicator& c) {
    // Rank r contributes r + 1 rows filled with r: the gather is 0 1 1 2 2 2 on every rank.
    const torch::Tensor local = torch::full({c.rank() + 1, 2}, static_cast<double>(c.rank()), torch::kDouble);
    const torch::Tensor all = c.all_gather_rows(local, "test gather");
    EXPECT_TRUE(torch::equal(all.select(1, 0), torch::tensor({0.0, 1.0, 1.0, 2.0, 2.0, 2.0}, torch::kDouble)));
    torch::Tensor sum = torch::tensor({static_cast<double>(c.rank()), 1.0}, torch::kDouble);
    c.all_reduce_sum(sum, "test sum");
    EXPECT_DOUBLE_EQ(sum[0].item<double>(), 3.0);  // 0 + 1 + 2
    EXPECT_DOUBLE_EQ(sum[1].item<double>(), 3.0);  // three ranks
    torch::Tensor peak = torch::tensor({-static_cast<double>(c.rank())}, torch::kDouble);
    c.all_reduce_max(peak, "test max");
    EXPECT_DOUBLE_EQ(peak.item<double>(), 0.0);
    const std::string text = c.broadcast_bytes(c.rank() == 0 ? std::string("config from rank 0\0with a NUL", 29) : std::string("other"), "test bytes");
    EXPECT_EQ(text, std::string("config from rank 0\0with a NUL", 29));
  });
}

TEST(Communicator, EmptyTensorsPassThroughEveryCollective) {
  // Gloo divides by the element count (an all-gather of nothing once killed the process with SIGFPE): a step
  // whose gradients touched no row of a table gathers zero rows on every rank.
  test::run_ranks(2, [](Communicator& c) {
    const torch::Tensor none = c.all_gather_rows(torch::zeros({0, 4}), "test empty gather");
    EXPECT_EQ(none.sizes(), (std::vector<std::int64_t>{0, 4}));
    const torch::Tensor no_columns = c.all_gather_rows(torch::zeros({c.rank() + 1, 0}), "test gather without columns");
    EXPECT_EQ(no_columns.sizes(), (std::vector<std::int64_t>{3, 0}));
    torch::Tensor empty = torch::zeros({0});
    c.all_reduce_sum(empty, "test empty sum");
    c.all_reduce_max(empty, "test empty max");
    c.broadcast(empty, "test empty broadcast");
    EXPECT_EQ(c.broadcast_bytes(c.rank() == 0 ? std::string() : std::string("x"), "test empty bytes"), "");
    // Still in step afterwards.
    torch::Tensor one = torch::ones({1});
    c.all_reduce_sum(one, "test sum after");
    EXPECT_EQ(one.item<float>(), 2.0f);
  });
}

TEST(Communicator, GatherWithGradSumsTheGradientsOfEveryRank) {
  // Each rank computes the same full loss L = Σ w ⊙ gather(x) / world; the gradient reaching rank r's rows is
  // the sum over ranks of L's gradient there, i.e. w's rows (independent of the world size).
  test::run_ranks(2, [](Communicator& c) {
    torch::Tensor x = torch::ones({2, 3}, torch::kDouble).requires_grad_(true);
    const torch::Tensor w = torch::arange(12, torch::kDouble).reshape({4, 3});
    (all_gather_rows_with_grad(c, x, 4) * w).sum().div(2).backward();
    EXPECT_TRUE(torch::allclose(x.grad(), w.narrow(0, 2 * c.rank(), 2)));
  });
}

TEST(Communicator, RefusesBadOptionsByName) {
  DistributedOptions o;
  o.world_size = 2;
  o.rank = 2;
  EXPECT_THROW(validate(o), ConfigError);
  o.rank = 1;  // a rank > 0 needs to know where rank 0 listens
  EXPECT_THROW(validate(o), ConfigError);
  for (const char* bad : {"", "host", ":80", "host:", "host:0", "host:65536", "host:12a", "ho st:80", "host:-1"})
    EXPECT_THROW(parse_master_address(bad, o), ConfigError) << bad;
  parse_master_address("10.1.2.3:29500", o);
  EXPECT_EQ(o.master_host, "10.1.2.3");
  EXPECT_EQ(o.master_port, 29500);
  try {
    parse_master_address("gpu-node:http", o);
    FAIL() << "a port name was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gpu-node:http"), std::string::npos) << e.what();
  }
}

TEST(Communicator, ChoosesTheBackendForTheDeviceAndRefusesWhatTheBuildLacks) {
  // requested, device, shared by other local processes, have gloo, have nccl -> chosen
  EXPECT_EQ(choose_collective_backend("auto", "cpu", false, true, true), "gloo");
  EXPECT_EQ(choose_collective_backend("auto", "cuda:1", false, true, true), "nccl");
  EXPECT_EQ(choose_collective_backend("auto", "cuda:0", true, true, true), "gloo");   // two processes on one GPU
  EXPECT_EQ(choose_collective_backend("auto", "cuda:0", false, true, false), "gloo");  // a GPU job on a build without NCCL
  EXPECT_EQ(choose_collective_backend("auto", "cuda:0", false, false, true), "nccl");  // PyTorch's wheels: NCCL, no Gloo headers
  EXPECT_EQ(choose_collective_backend("gloo", "cuda:0", false, true, true), "gloo");
  EXPECT_EQ(choose_collective_backend("nccl", "cuda:2", false, false, true), "nccl");
  // The request refused, with a message containing `expected`.
  auto expect_refused = [](const std::string& requested, const std::string& device, bool shared, bool gloo, bool nccl,
                           const std::string& expected) {
    std::string message = "accepted";
    try {
      choose_collective_backend(requested, device, shared, gloo, nccl);
    } catch (const ConfigError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(expected), std::string::npos) << requested << " on " << device << ": " << message;
  };
  expect_refused("nccl", "cpu", false, true, true, "for device cpu");
  expect_refused("nccl", "cuda:0", true, true, true, "share device cuda:0");
  expect_refused("nccl", "cuda:0", false, true, false, "built without NCCL");
  expect_refused("gloo", "cuda:0", false, false, true, "without Gloo");
  expect_refused("auto", "cpu", false, false, true, "on device cpu");
  expect_refused("auto", "cuda:0", true, false, true, "a GPU per process");
  expect_refused("auto", "cuda:0", false, false, false, "without NCCL");
  expect_refused("mpi", "cpu", false, true, true, "\"mpi\"");
}

TEST(Communicator, EveryRanksReportReachesRankZeroAndItsAnswerEveryRank) {
  // The round before a job joins its group: each rank reports, rank 0 reads them in rank order and answers.
  test::run_ranks(3, [](Communicator& c) {
    const std::vector<std::string> reports = c.gather_at_main("rank " + std::to_string(c.rank()), "test reports");
    if (c.rank() == 0) {
      EXPECT_EQ(reports, (std::vector<std::string>{"rank 0", "rank 1", "rank 2"}));
    } else {
      EXPECT_TRUE(reports.empty());
    }
    EXPECT_EQ(c.share_from_main(c.rank() == 0 ? "go" : "ignored", "test answer"), "go");
    // A second round gets keys of its own.
    const std::vector<std::string> again = c.gather_at_main(std::string(static_cast<std::size_t>(c.rank()), 'x'), "test reports 2");
    if (c.rank() == 0) {
      EXPECT_EQ(again, (std::vector<std::string>{"", "x", "xx"}));
    }
  });
}

TEST(Communicator, AWorkersScratchFolderStartsEmptyEvenWhenAKilledJobLeftOneUnderItsPid) {
  // A worker killed together with its rank 0 leaves /tmp/xmc-rank1-<pid>; a later worker with that pid loaded
  // the vocabulary it found there (the distributed tests' rare step-1 mismatches).
  const long pid = 999999937;  // above any pid this machine hands out
  const auto stale = rank_scratch_directory(1, pid);
  std::filesystem::create_directories(stale);
  { std::ofstream(stale / "vocab.txt") << "[PAD]\n[UNK]\nanother\njob\n"; }
  const auto fresh = fresh_rank_scratch_directory(1, pid);
  EXPECT_EQ(fresh, stale);
  EXPECT_TRUE(std::filesystem::is_directory(fresh));
  EXPECT_TRUE(std::filesystem::is_empty(fresh));
  std::filesystem::remove_all(fresh);
}

TEST(Communicator, ReachingNoRankZeroIsAClearError) {
  DistributedOptions o;
  o.world_size = 2;
  o.rank = 1;
  o.master_port = 1;  // nothing listens on port 1
  o.timeout_minutes = 0.05;
  try {
    Communicator c(o);
    c.join(torch::kCPU, "gloo");
    FAIL() << "joined a group without rank 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

class ShardedLosses : public ::testing::TestWithParam<int> {};

TEST_P(ShardedLosses, DecoupledSoftmaxEqualsTheSingleProcessLoss) {
  const int world = GetParam();
  const Problem p = make_problem(6, 23, 11);
  LossOptions options;
  options.temperature = 0.1;
  const Reference reference = single_process(p, loss_entry("decoupled_softmax"), options);
  const ShardedRun run = sharded(p, world, /*soft_topk=*/false, options);
  for (const double v : run.values) EXPECT_NEAR(v, reference.value, 1e-12);
  EXPECT_TRUE(torch::allclose(run.grad, reference.grad, 1e-10, 1e-12)) << (run.grad - reference.grad).abs().max().item<double>();
}

TEST_P(ShardedLosses, SoftTopKEqualsTheSingleProcessLoss) {
  const int world = GetParam();
  const Problem p = make_problem(6, 23, 12);
  LossOptions options;
  options.temperature = 0.2;
  options.topk_k = 4;
  const Reference reference = single_process(p, loss_entry("softtopk"), options);
  const ShardedRun run = sharded(p, world, /*soft_topk=*/true, options);
  for (const double v : run.values) EXPECT_NEAR(v, reference.value, 1e-10);
  EXPECT_TRUE(torch::allclose(run.grad, reference.grad, 1e-8, 1e-10)) << (run.grad - reference.grad).abs().max().item<double>();
}

TEST_P(ShardedLosses, SoftTopKThresholdPutsKLabelsInTheTopOverAllShards) {
  // Independent of the single-process code: Σ_j σ(α(s_ij/τ + t_i)) over the concatenated shards is k.
  const int world = GetParam();
  const Problem p = make_problem(5, 17, 13);
  LossOptions options;
  options.temperature = 0.5;
  options.topk_alpha = 2;
  options.topk_k = 3;
  std::vector<torch::Tensor> thresholds(static_cast<std::size_t>(world));
  test::run_ranks(world, [&](Communicator& c) {
    const auto [begin, end] = shard_range(p.scores.size(1), c.rank(), c.world_size());
    thresholds[static_cast<std::size_t>(c.rank())] = sharded_soft_topk_threshold(c, p.scores.narrow(1, begin, end - begin), options);
  });
  for (const auto& t : thresholds) {
    EXPECT_TRUE(torch::equal(t, thresholds[0]));
    const torch::Tensor members = torch::sigmoid(options.topk_alpha * (p.scores / options.temperature + t.unsqueeze(1))).sum(1);
    EXPECT_TRUE(torch::allclose(members, torch::full({5}, 3.0, torch::kDouble), 0, 1e-9));
  }
}

TEST(ShardedLossesEdge, AShardWithoutPositivesOrLabelsStillTakesPart) {
  // 2 labels over 3 ranks (rank 2 holds none), the only positives in rank 0's column: the value and the
  // gradients still match, and no rank waits for a collective another skipped.
  Problem p;
  p.scores = torch::tensor({{0.3, -0.2}, {0.1, 0.5}}, torch::kDouble);
  p.mask = torch::tensor({{true, false}, {true, false}});
  LossOptions options;
  const Reference reference = single_process(p, loss_entry("decoupled_softmax"), options);
  const ShardedRun run = sharded(p, 3, /*soft_topk=*/false, options);
  EXPECT_NEAR(run.values[2], reference.value, 1e-12);
  EXPECT_TRUE(torch::allclose(run.grad, reference.grad, 1e-10, 1e-12));
  // By hand: each row's one negative is the other column, so loss_i = log(1 + e^{(s_i1 - s_i0)/τ}).
  const double by_hand = (std::log1p(std::exp((-0.2 - 0.3) / 0.05)) + std::log1p(std::exp((0.5 - 0.1) / 0.05))) / 2;
  EXPECT_NEAR(reference.value, by_hand, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShardedLosses, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace xmc
