// Two parts of a step side by side: on two threads when LibTorch has two, in order on one; the caller's grad
// mode inside both; an exception from either part reaching the caller; backward passes run side by side giving
// the gradients that the same passes give one after the other.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "engine/method/side_by_side.h"

namespace xmc {
namespace {

/// Sets LibTorch's intra-op thread count for one test and puts the previous one back.
struct IntraOpThreads {
  explicit IntraOpThreads(int n) : previous(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(previous); }
  int previous;
};

}  // namespace

TEST(SideBySide, TwoThreadsRunThePartsOnTwoThreadsAtOnce) {
  const IntraOpThreads threads(2);
  ASSERT_TRUE(side_by_side_available());
  std::thread::id first_thread, second_thread;
  // Each part waits (bounded) for the other to start: they can only both see it if they overlap in time.
  std::atomic<int> started{0};
  bool first_saw_second = false, second_saw_first = false;
  auto wait_for_both = [&] {
    started.fetch_add(1);
    for (int i = 0; i < 2000 && started.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return started.load() == 2;
  };
  run_side_by_side(
      [&] {
        first_thread = std::this_thread::get_id();
        first_saw_second = wait_for_both();
      },
      [&] {
        second_thread = std::this_thread::get_id();
        second_saw_first = wait_for_both();
      });
  EXPECT_NE(first_thread, second_thread);
  EXPECT_TRUE(first_saw_second && second_saw_first) << "the parts ran one after the other";
}

TEST(SideBySide, OneThreadRunsThePartsInOrderOnTheCallersThread) {
  const IntraOpThreads threads(1);
  EXPECT_FALSE(side_by_side_available());
  std::vector<std::pair<int, std::thread::id>> ran;
  run_side_by_side([&] { ran.emplace_back(1, std::this_thread::get_id()); }, [&] { ran.emplace_back(2, std::this_thread::get_id()); });
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_EQ(ran[0], std::make_pair(1, std::this_thread::get_id()));
  EXPECT_EQ(ran[1], std::make_pair(2, std::this_thread::get_id()));
}

TEST(SideBySide, BothPartsHaveTheCallersGradMode) {
  const IntraOpThreads threads(2);
  for (const bool grad : {true, false}) {
    const torch::AutoGradMode mode(grad);
    bool first = !grad, second = !grad;
    run_side_by_side([&] { first = torch::GradMode::is_enabled(); }, [&] { second = torch::GradMode::is_enabled(); });
    EXPECT_EQ(first, grad);
    EXPECT_EQ(second, grad);
  }
}

TEST(SideBySide, AnExceptionFromEitherPartReachesTheCallerAfterBothEnded) {
  for (const int threads_wanted : {1, 2}) {
    const IntraOpThreads threads(threads_wanted);
    bool other_finished = false;
    EXPECT_THROW(run_side_by_side([&] { other_finished = true; }, [] { throw std::runtime_error("second part failed"); }), std::runtime_error);
    EXPECT_TRUE(other_finished) << threads_wanted << " threads";
    // A failing first part does not keep the second from running.
    other_finished = false;
    try {
      run_side_by_side([] { throw std::invalid_argument("first part failed"); }, [&] { other_finished = true; });
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), "first part failed");
    }
    EXPECT_TRUE(other_finished) << threads_wanted << " threads";
  }
}

TEST(SideBySide, BackwardPassesSideBySideGiveTheGradientsOfPassesOneAfterTheOther) {
  const IntraOpThreads threads(2);
  torch::manual_seed(5);
  // Two heads over one shared input, as UniDEC's: the graph is cut at the input, each head's loss goes back
  // on its own thread, and the input's gradient is the sum of the heads'.
  const torch::Tensor x = torch::randn({64, 16}), w1 = torch::randn({16, 24}).requires_grad_(), w2 = torch::randn({16, 8}).requires_grad_();
  auto head_loss = [](const torch::Tensor& in, const torch::Tensor& w) { return torch::tanh(torch::matmul(in, w)).pow(2).sum(); };

  const torch::Tensor x_serial = x.clone().requires_grad_();
  (head_loss(x_serial, w1) + head_loss(x_serial, w2)).backward();
  const torch::Tensor w1_grad = w1.grad().clone(), w2_grad = w2.grad().clone(), x_grad = x_serial.grad().clone();
  w1.mutable_grad().reset();
  w2.mutable_grad().reset();

  const torch::Tensor in1 = x.clone().requires_grad_(), in2 = x.clone().requires_grad_();
  torch::Tensor loss1, loss2;
  run_side_by_side([&] { loss1 = head_loss(in1, w1); }, [&] { loss2 = head_loss(in2, w2); });
  run_side_by_side([&] { loss1.backward(); }, [&] { loss2.backward(); });
  EXPECT_TRUE(torch::allclose(w1.grad(), w1_grad, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(w2.grad(), w2_grad, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(in1.grad() + in2.grad(), x_grad, 1e-5, 1e-6));
}

}  // namespace xmc
