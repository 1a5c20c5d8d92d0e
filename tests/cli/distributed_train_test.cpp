// `xmc train --nproc N` as a user runs it: N Gloo processes on this machine train the same run as one process
// with the same global batch (same loss at every step, same metrics), for in-batch, hard and all-label
// negatives; a worker killed -9 ends the job with a message naming it and a resumable run; killing rank 0
// leaves no worker behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/store/run_store.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

extern char** environ;

namespace xmc {
namespace {

using Clock = std::chrono::steady_clock;

/// A small DEXML job without dropout (so that rank order cannot change a number) on one thread per process.
std::string train_line(const std::filesystem::path& data, const std::filesystem::path& db, int nproc, const std::string& extra = "") {
  return std::string(XMC_CLI_PATH) + " train --db '" + db.string() + "' --set dataset='" + data.string() +
         "' --set method=dexml --set encoder.dim=16 --set encoder.dropout=0 --set batch_size=32 --set epochs=2 --set lr=0.01"
         " --set threads=1 --set eval.k=[1,3] --set tsne.every=0 --nproc " + std::to_string(nproc) + " " + extra + " --json";
}

std::vector<double> losses(const std::filesystem::path& db, std::int64_t run) {
  std::vector<double> values;
  for (const ScalarPoint& p : RunStore(db).scalars(run))
    if (p.key == "loss") values.push_back(p.value);
  return values;
}

struct Equivalence {
  const char* name;
  std::string settings;
  int processes;
  int noise_words = 40;  ///< 3000: a word table past 1024 rows, whose gradient travels as its touched rows
  std::string many_only;  ///< settings of the N-process job alone (the one process trains without them)
};

class DistributedTraining : public ::testing::TestWithParam<Equivalence> {};

TEST_P(DistributedTraining, NProcessesTrainLikeOneWithTheSameGlobalBatch) {
  const Equivalence& e = GetParam();
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 5, 1200, 200, e.noise_words);
  const auto one = test::run_command(train_line(dir / "data", dir / "one.sqlite", 1, e.settings), false);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto many = test::run_command(train_line(dir / "data", dir / "many.sqlite", e.processes, e.settings + " " + e.many_only) + " 2>&1");
  ASSERT_EQ(many.exit_code, 0) << many.output;

  const std::vector<double> expected = losses(dir / "one.sqlite", 1);
  const std::vector<double> got = losses(dir / "many.sqlite", 1);
  ASSERT_EQ(got.size(), expected.size()) << "the same number of global steps";
  ASSERT_GT(got.size(), 50u);
  // A mismatch shows the N-process job's own log (rare step-1 mismatches came from a stale worker scratch folder, now emptied).
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-4 * std::max(1.0, expected[i])) << "step " << i + 1 << "; the " << e.processes << "-process job said:\n"
                                                                        << many.output;
  const auto a = nlohmann::json::parse(one.last_line());
  const auto b = nlohmann::json::parse(many.last_line());
  EXPECT_NEAR(b["P@1"].get<double>(), a["P@1"].get<double>(), 0.005);
  EXPECT_NEAR(b["P@3"].get<double>(), a["P@3"].get<double>(), 0.005);
  EXPECT_GT(a["P@1"].get<double>(), 0.5) << "the job learned something (random ranking gets ~0.17)";
  EXPECT_EQ(RunStore(dir / "many.sqlite").list_runs().size(), 1u) << "only rank 0 records the run";
}

INSTANTIATE_TEST_SUITE_P(
    Negatives, DistributedTraining,
    ::testing::Values(Equivalence{"inbatch_decoupled_2", "--set negatives=inbatch --set loss=decoupled_softmax", 2},
                      Equivalence{"hard_softmax_3", "--set negatives=hard --set hard.per_query=2 --set hard.shortlist=6 --set hard.refresh_every=1 --set loss=softmax", 3},
                      // Each process preparing its next batch ahead (hard negatives read the shortlist there) against one that does not.
                      Equivalence{"hard_prefetch_2", "--set negatives=hard --set hard.per_query=2 --set hard.shortlist=6 --set hard.refresh_every=1 --set loss=softmax", 2, 40, "--set prefetch=on"},
                      Equivalence{"all_decoupled_sharded_3", "--set negatives=all --set loss=decoupled_softmax --set all.label_chunk=5", 3},
                      Equivalence{"all_softtopk_sharded_2", "--set negatives=all --set loss=softtopk", 2},
                      Equivalence{"inbatch_word_rows_3", "--set negatives=inbatch --set loss=decoupled_softmax --set epochs=4 --set lr=0.03", 3, 3000}),
    [](const ::testing::TestParamInfo<Equivalence>& case_info) { return std::string(case_info.param.name); });

/// Two network namespaces joined by a veth pair, each end with an address of its own (10.231.N.1 and .2/30, N from
/// the process id): two "hosts" on this machine that reach each other only through that link. Removed with the
/// namespaces (which take the veth pair along). `error` says why they could not be made.
class TwoHostNetwork {
 public:
  TwoHostNetwork() {
    const int id = static_cast<int>(::getpid() % 100000);
    const std::string n = std::to_string(id % 250 + 1);
    host_a_ = "xmc-a-" + std::to_string(id);
    host_b_ = "xmc-b-" + std::to_string(id);
    link_a_ = "xa" + std::to_string(id);
    link_b_ = "xb" + std::to_string(id);
    address_a_ = "10.231." + n + ".1";
    address_b_ = "10.231." + n + ".2";
    for (const std::string& step : {"ip netns add " + host_a_, "ip netns add " + host_b_,
                                    "ip link add " + link_a_ + " netns " + host_a_ + " type veth peer name " + link_b_ + " netns " + host_b_,
                                    in_a("ip addr add " + address_a_ + "/30 dev " + link_a_), in_b("ip addr add " + address_b_ + "/30 dev " + link_b_),
                                    in_a("ip link set lo up"), in_b("ip link set lo up"), in_a("ip link set " + link_a_ + " up"),
                                    in_b("ip link set " + link_b_ + " up")}) {
      const auto r = test::run_command(step);
      if (r.exit_code != 0) {
        error_ = "`" + step + "` failed: " + r.output;
        return;
      }
    }
  }
  ~TwoHostNetwork() {
    test::run_command("ip netns del " + host_a_);
    test::run_command("ip netns del " + host_b_);
  }
  TwoHostNetwork(const TwoHostNetwork&) = delete;
  TwoHostNetwork& operator=(const TwoHostNetwork&) = delete;

  const std::string& error() const { return error_; }
  const std::string& address_a() const { return address_a_; }
  /// `command` run on host A (B), Gloo told which interface leads to the other host.
  std::string in_a(const std::string& command) const { return "ip netns exec " + host_a_ + " env GLOO_SOCKET_IFNAME=" + link_a_ + " " + command; }
  std::string in_b(const std::string& command) const { return "ip netns exec " + host_b_ + " env GLOO_SOCKET_IFNAME=" + link_b_ + " " + command; }

 private:
  std::string host_a_, host_b_, link_a_, link_b_, address_a_, address_b_, error_;
};

TEST(DistributedTraining, TwoRanksOnTwoHostsTrainLikeOneProcess) {
  // Multi-host training as a user starts it (--rank/--world-size/--master on each host), the hosts being two network
  // namespaces of this machine: rank 0 owns the run and the store, rank 1 is given only the master's address.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make network namespaces (ip netns); run the suite as root to include it";
  TwoHostNetwork network;
  if (!network.error().empty()) GTEST_SKIP() << "network namespaces are not available here: " << network.error();
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 5, 1200, 200);
  const auto one = test::run_command(train_line(dir / "data", dir / "one.sqlite", 1, "--set negatives=inbatch"), false);
  ASSERT_EQ(one.exit_code, 0) << one.output;

  const std::string master = network.address_a() + ":29517";
  const std::string xmc = XMC_CLI_PATH;
  std::string rank0 = train_line(dir / "data", dir / "hosts.sqlite", 1, "--set negatives=inbatch");
  rank0.replace(rank0.find(" --nproc 1"), 10, " --rank 0 --world-size 2 --master " + master);
  const std::string rank1 = xmc + " train --rank 1 --world-size 2 --master " + master + " --timeout-minutes 2";
  // Rank 1 in the background on host B; rank 0 in the foreground on host A; then rank 1's exit status.
  const auto both = test::run_command("(" + network.in_b(rank1) + " > '" + (dir / "rank1.log").string() + "' 2>&1 & pid=$!; " + network.in_a(rank0) +
                                      " 2>'" + (dir / "rank0.log").string() + "'; status=$?; wait $pid || status=$?; exit $status)",
                                      false);
  const std::string logs = "rank 0:\n" + test::read_file(dir / "rank0.log") + "\nrank 1:\n" + test::read_file(dir / "rank1.log");
  ASSERT_EQ(both.exit_code, 0) << both.output << logs;
  EXPECT_NE(test::read_file(dir / "rank0.log").find("joined the gloo group"), std::string::npos) << logs;

  const std::vector<double> expected = losses(dir / "one.sqlite", 1);
  const std::vector<double> got = losses(dir / "hosts.sqlite", 1);
  ASSERT_EQ(got.size(), expected.size()) << "the same number of global steps";
  ASSERT_GT(got.size(), 50u);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4 * std::max(1.0, expected[i])) << "step " << i + 1 << logs;
  const auto a = nlohmann::json::parse(one.last_line());
  const auto b = nlohmann::json::parse(both.last_line());
  EXPECT_NEAR(b["P@1"].get<double>(), a["P@1"].get<double>(), 0.005);
  EXPECT_EQ(RunStore(dir / "hosts.sqlite").list_runs().size(), 1u) << "only rank 0 records the run";
}

TEST(DistributedTraining, SummingGradientsDuringBackwardTrainsLikeSummingAfterIt) {
  // UniDEC's processes each train a shard of the batch, so their dense gradients are summed in buckets while
  // backward runs (distributed.overlap=on); with two processes every sum is the same two numbers added.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 5, 1200, 200);
  const std::string unidec = "--set method=unidec --set negatives=hard --set psl.refresh_every=1 --set distributed.overlap=";
  const auto during = test::run_command(train_line(dir / "data", dir / "on.sqlite", 2, unidec + "on") + " 2>&1");
  ASSERT_EQ(during.exit_code, 0) << during.output;
  const auto after = test::run_command(train_line(dir / "data", dir / "off.sqlite", 2, unidec + "off") + " 2>&1");
  ASSERT_EQ(after.exit_code, 0) << after.output;
  const std::vector<double> a = losses(dir / "off.sqlite", 1);
  const std::vector<double> b = losses(dir / "on.sqlite", 1);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 50u);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(b[i], a[i]) << "step " << i + 1;
  EXPECT_GT(nlohmann::json::parse(during.last_line())["P@1"].get<double>(), 0.5) << "the job learned something";
}

TEST(DistributedTraining, AJobStoppedWithTwoProcessesResumesWithThreeToTheOneProcessResult) {
  // Checkpoints hold global batches and rank 0's state, so the number of processes may change on resume.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 8, 1200, 200);
  const auto plain = test::run_command(train_line(dir / "data", dir / "one.sqlite", 1), false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto stopped = test::run_command(train_line(dir / "data", dir / "runs.sqlite", 2, "--set max_steps=30"), false);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  EXPECT_EQ(nlohmann::json::parse(stopped.last_line())["status"], "stopped");
  const auto resumed = test::run_command(std::string(XMC_CLI_PATH) + " train --resume 1 --db '" + (dir / "runs.sqlite").string() +
                                             "' --set max_steps=0 --nproc 3 --json",
                                         false);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto a = nlohmann::json::parse(plain.last_line());
  const auto b = nlohmann::json::parse(resumed.last_line());
  EXPECT_EQ(b["status"], "completed");
  EXPECT_NEAR(b["P@1"].get<double>(), a["P@1"].get<double>(), 1e-9);
  EXPECT_NEAR(b["P@3"].get<double>(), a["P@3"].get<double>(), 1e-9);
  const std::vector<double> expected = losses(dir / "one.sqlite", 1);
  const std::vector<double> got = losses(dir / "runs.sqlite", 1);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4 * std::max(1.0, expected[i])) << "step " << i + 1;
}

TEST(DistributedTraining, AJobStoppedWithDropoutResumesAsIfNeverStopped) {
  // With dropout every rank draws its own masks, and only rank 0's generator is in the checkpoint: the other
  // ranks' masks after the resume must still be the ones an uninterrupted run draws.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 8, 1200, 200);
  const std::string with_dropout = "--set encoder.dropout=0.3";
  const auto plain = test::run_command(train_line(dir / "data", dir / "plain.sqlite", 2, with_dropout), false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto stopped = test::run_command(train_line(dir / "data", dir / "runs.sqlite", 2, with_dropout + " --set max_steps=30"), false);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  const auto resumed = test::run_command(std::string(XMC_CLI_PATH) + " train --resume 1 --db '" + (dir / "runs.sqlite").string() +
                                             "' --set max_steps=0 --nproc 2 --json",
                                         false);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::vector<double> expected = losses(dir / "plain.sqlite", 1);
  const std::vector<double> got = losses(dir / "runs.sqlite", 1);
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_GT(got.size(), 40u) << "steps after the resume";
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-6 * std::max(1.0, expected[i])) << "step " << i + 1;
}

TEST(DistributedFailures, StepsWhoseGradientsVanishKeepTheJobGoing) {
  // Bibtex trained far too hot saturates: whole steps come out with exactly zero gradients, so no rank touches
  // a row of the embedding table. Gathering those zero rows once killed rank 0 inside Gloo (SIGFPE).
  const std::filesystem::path mulan = std::filesystem::path(XMC_SHARED_DIR) / "datasets" / "mulan" / "bibtex";
  if (!std::filesystem::exists(mulan / "bibtex-train.arff")) GTEST_SKIP() << "no " << mulan;
  test::TempDir dir;
  const auto imported = test::run_command(std::string(XMC_CLI_PATH) + " dataset import mulan --train '" + (mulan / "bibtex-train.arff").string() +
                                          "' --test '" + (mulan / "bibtex-test.arff").string() + "' --labels '" + (mulan / "bibtex.xml").string() +
                                          "' --out '" + (dir / "bibtex").string() + "'");
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  const auto r = test::run_command(std::string(XMC_CLI_PATH) + " train --db '" + (dir / "runs.sqlite").string() + "' --set dataset='" +
                                   (dir / "bibtex").string() +
                                   "' --set method=dexml --set epochs=1 --set batch_size=128 --set lr=10 --set temperature=0.001"
                                   " --set optim.grad_clip=0 --set encoder.init_std=100 --set encoder.dropout=0 --set tsne.every=0 --set eval.k=[1]"
                                   " --nproc 2 --json 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("Floating point"), std::string::npos) << r.output;
  EXPECT_EQ(RunStore(dir / "runs.sqlite").get_run(1).status, RunStatus::Completed);
}

/// Starts a command line through the shell with its output into `log`; returns the shell's pid (exec'd, so
/// the command's own).
pid_t spawn_logged(const std::string& line, const std::filesystem::path& log) {
  const std::string command = "exec " + line + " >'" + log.string() + "' 2>&1";
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  return ::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) == 0 ? pid : -1;
}

/// The pids whose parent is `parent` (from /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    char state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid == parent) children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return children;
}

/// Running (a zombie waiting for its new parent to reap it has ended).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

/// Waits until the run has stored at least `steps` loss values; false after 60 s.
bool wait_for_steps(const std::filesystem::path& db, std::size_t steps) {
  return test::poll_until([&] { return std::filesystem::exists(db) && RunStore(db).find_run(1) && losses(db, 1).size() >= steps; },
                          std::chrono::seconds(60), std::chrono::milliseconds(50));
}

TEST(DistributedFailures, AKilledWorkerEndsTheJobByNameAndTheRunResumes) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 6, 1200, 200);
  const std::string settings = "--set epochs=40 --set checkpoint.every_steps=20 --set eval.every=100";
  const pid_t trainer = spawn_logged(train_line(dir / "data", dir / "runs.sqlite", 2, settings), dir / "train.log");
  ASSERT_GT(trainer, 0);
  ASSERT_TRUE(wait_for_steps(dir / "runs.sqlite", 45)) << test::read_file(dir / "train.log");
  const std::vector<pid_t> workers = children_of(trainer);
  ASSERT_EQ(workers.size(), 1u) << "rank 0 starts one worker for --nproc 2";
  ASSERT_EQ(::kill(workers[0], SIGKILL), 0);

  int status = 0;
  const auto killed_at = Clock::now();
  ASSERT_EQ(::waitpid(trainer, &status, 0), trainer);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - killed_at).count(), 20.0) << "rank 0 noticed the dead worker promptly";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  const RunInfo failed = RunStore(dir / "runs.sqlite").get_run(1);
  EXPECT_EQ(failed.status, RunStatus::Failed);
  EXPECT_NE(failed.last_error.find("rank 1 (pid " + std::to_string(workers[0]) + ") was killed by signal 9"), std::string::npos)
      << failed.last_error;
  const std::size_t recorded = losses(dir / "runs.sqlite", 1).size();

  // Resumed with two processes again, from the last checkpoint: it trains to the end, every step once.
  const auto resumed = test::run_command(std::string(XMC_CLI_PATH) + " train --resume 1 --db '" + (dir / "runs.sqlite").string() +
                                         "' --nproc 2 --json --set epochs=3 2>&1");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(nlohmann::json::parse(resumed.last_line())["status"], "completed");
  std::map<std::int64_t, int> per_step;
  std::int64_t last = 0;
  for (const ScalarPoint& p : RunStore(dir / "runs.sqlite").scalars(1))
    if (p.key == "loss") {
      EXPECT_EQ(++per_step[p.step], 1) << "step " << p.step << " stored twice";
      last = std::max(last, p.step);
    }
  EXPECT_GE(static_cast<std::size_t>(last), recorded) << "the resumed run went on from the checkpoint";
  EXPECT_EQ(per_step.size(), static_cast<std::size_t>(last)) << "no step missing";
}

TEST(DistributedFailures, ABackendTheJobCannotUseIsRefusedByName) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 8, 200, 40);
  // NCCL runs on GPUs only (and this build may lack it): every rank refuses at the join, promptly.
  const auto started = Clock::now();
  const auto nccl = test::run_command(train_line(dir / "data", dir / "runs.sqlite", 2, "--set distributed.backend=nccl") + " 2>&1");
  EXPECT_NE(nccl.exit_code, 0) << nccl.output;
  EXPECT_NE(nccl.output.find("distributed.backend: got \"nccl\""), std::string::npos) << nccl.output;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - started).count(), 60.0) << "the workers did not wait for a timeout";
  // Not a backend at all: refused with the config, before any process starts.
  const auto mpi = test::run_command(train_line(dir / "data", dir / "runs.sqlite", 2, "--set distributed.backend=mpi") + " 2>&1");
  EXPECT_NE(mpi.exit_code, 0) << mpi.output;
  EXPECT_NE(mpi.output.find("distributed.backend"), std::string::npos) << mpi.output;
  EXPECT_NE(mpi.output.find("mpi"), std::string::npos) << mpi.output;
  // Gloo named explicitly trains as "auto" does on the CPU.
  const auto gloo = test::run_command(train_line(dir / "data", dir / "runs.sqlite", 2, "--set distributed.backend=gloo --set epochs=1") + " 2>&1");
  ASSERT_EQ(gloo.exit_code, 0) << gloo.output;
  EXPECT_EQ(nlohmann::json::parse(gloo.last_line())["status"], "completed");
}

TEST(DistributedFailures, KillingRankZeroLeavesNoWorkerBehind) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 7, 1200, 200);
  const pid_t trainer = spawn_logged(train_line(dir / "data", dir / "runs.sqlite", 3, "--set epochs=40 --set eval.every=100"), dir / "train.log");
  ASSERT_GT(trainer, 0);
  ASSERT_TRUE(wait_for_steps(dir / "runs.sqlite", 10)) << test::read_file(dir / "train.log");
  const std::vector<pid_t> workers = children_of(trainer);
  ASSERT_EQ(workers.size(), 2u);
  ASSERT_EQ(::kill(trainer, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(trainer, &status, 0), trainer);
  const auto until = Clock::now() + std::chrono::seconds(15);
  bool any = true;
  while (any && Clock::now() < until) {
    any = false;
    for (const pid_t w : workers) any = any || alive(w);
    if (any) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(any) << "a worker outlived rank 0";
}

}  // namespace
}  // namespace xmc
