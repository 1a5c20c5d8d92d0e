// Rank 0 alone for longer than the collectives' timeout — paused from the workbench, or evaluating a large
// label set — does not end a data-parallel job: the other processes wait for it on the rendezvous store.
// Also: a stage whose parameters start at random (UniDEC's classifier table) starts every rank from rank 0's.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/core/error.h"
#include "engine/session/session.h"
#include "engine/model/encoder_options.h"
#include "engine/method/unidec/unidec_options.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

TrainConfig small_job(const std::filesystem::path& data) {
  TrainConfig config;
  config.dataset = data;
  config.method = "dexml";
  config.edit<EncoderOptions>().dim = 16;
  config.edit<EncoderOptions>().dropout = 0;
  config.batch_size = 32;
  config.epochs = 2;
  config.lr = 0.01;
  config.threads = 1;
  config.eval_k = {1, 3};
  config.tsne_every = 0;
  return config;
}

TrainingProcesses two_processes(double timeout_minutes) {
  TrainingProcesses processes;
  processes.local = 2;
  processes.worker_binary = XMC_CLI_PATH;
  processes.timeout_minutes = timeout_minutes;
  return processes;
}

TEST(DistributedHold, APauseLongerThanTheTimeoutKeepsTheJob) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 9, 1200, 200);
  Session session(dir / "runs.sqlite");
  // A 3-second timeout, a 6-second pause.
  RunHandle run = session.start_run(small_job(dir / "data"), two_processes(0.05));
  std::atomic<bool> paused_once{false};
  std::thread pauser;
  run.subscribe([&](const TrainEvent& e) {
    if (e.kind == TrainEvent::Kind::Step && e.step == 5 && !paused_once.exchange(true)) {
      run.set_paused(true);
      pauser = std::thread([&run] {
        std::this_thread::sleep_for(std::chrono::seconds(6));
        run.set_paused(false);
      });
    }
  });
  TrainResult result;
  EXPECT_NO_THROW(result = run.run());
  if (pauser.joinable()) pauser.join();
  EXPECT_TRUE(paused_once.load());
  EXPECT_EQ(result.outcome, RunOutcome::Completed);
  EXPECT_EQ(session.get_run(run.run_id()).status, RunStatus::Completed);
}

TEST(DistributedHold, AWorkerThatNeverJoinsIsNamedWhenTheWaitEnds) {
  // /bin/false stands for a worker binary that exits at once: rank 0 stops waiting for it after the timeout
  // (3 s here) and says what became of it; the run is failed, not left running.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 11, 300, 50);
  Session session(dir / "runs.sqlite");
  TrainingProcesses processes = two_processes(0.05);
  processes.worker_binary = "/bin/false";
  RunHandle run = session.start_run(small_job(dir / "data"), processes);
  try {
    run.run();
    FAIL() << "trained without its second process";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 1 (pid "), std::string::npos) << message;
    EXPECT_NE(message.find("exited with status 1"), std::string::npos) << message;
  }
  EXPECT_EQ(session.get_run(run.run_id()).status, RunStatus::Failed);
}

TEST(DistributedHold, UnidecWithARandomClassifierTableTrainsInTwoProcessesAsInOne) {
  // Ranks that start the table apart would each train their own model: the two-process run would then fall
  // far behind the one-process one. Same start, shards of each batch: close results.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 10, 1200, 200);
  TrainConfig config = small_job(dir / "data");
  config.method = "unidec";
  config.edit<UnidecOptions>().classifier_init = "random";
  config.epochs = 3;
  Session session(dir / "runs.sqlite");
  RunHandle one = session.start_run(config);
  const TrainResult a = one.run();
  RunHandle two = session.start_run(config, two_processes(5));
  const TrainResult b = two.run();
  ASSERT_EQ(b.outcome, RunOutcome::Completed);
  auto p_at_1 = [](const TrainResult& r) {
    for (const auto& [name, value] : r.metrics.metrics)
      if (name == "P@1") return value;
    return -1.0;
  };
  const double p1_one = p_at_1(a), p1_two = p_at_1(b);
  EXPECT_GT(p1_two, 0.5) << "random ranking gets ~0.17";
  EXPECT_NEAR(p1_two, p1_one, 0.05);
}

}  // namespace
}  // namespace xmc
