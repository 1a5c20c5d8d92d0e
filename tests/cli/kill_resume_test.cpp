// kill -9 at a random moment of `xmc train`, then `xmc train --resume`: the run completes with exactly the
// metrics of an uninterrupted run and exactly one scalar row per (key, step). Kills before the first
// checkpoint exercise the restart from step 0, later ones a resume from a checkpoint inside an epoch.
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
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine/store/run_store.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

extern char** environ;

namespace xmc {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> train_args(const std::filesystem::path& data, const std::filesystem::path& db) {
  return {XMC_CLI_PATH,           "train",
          "--db",                 db.string(),
          "--set",                "dataset=" + data.string(),
          "--set",                "encoder.dim=16",
          "--set",                "batch_size=8",
          "--set",                "epochs=3",
          "--set",                "lr=0.01",
          "--set",                "threads=1",
          "--set",                "checkpoint.every_steps=40",
          // The word table (~55 rows) takes deferred row updates, which a checkpoint brings up to date.
          "--set",                "optim.deferred_rows_from=50",
          "--set",                "eval.k=[1,3]",
          "--set",                "tsne.every=0",
          "--json"};
}

/// Starts a command with its output discarded; returns its pid.
pid_t spawn_quietly(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

/// Every (key, step) must be stored once; returns the loss steps in order.
std::vector<std::int64_t> checked_loss_steps(const std::filesystem::path& db, std::int64_t run) {
  RunStore store(db);
  std::map<std::pair<std::string, std::int64_t>, int> rows;
  std::vector<std::int64_t> loss_steps;
  for (const ScalarPoint& p : store.scalars(run)) {
    if (++rows[{p.key, p.step}] == 2) ADD_FAILURE() << "scalar " << p.key << " of step " << p.step << " is stored twice";
    if (p.key == "loss") loss_steps.push_back(p.step);
  }
  return loss_steps;
}

/// Polls the store until run 1 exists (the process has recorded it); false after 30 s.
bool wait_for_run(const std::filesystem::path& db) {
  return test::poll_until([&] { return std::filesystem::exists(db) && RunStore(db).find_run(1).has_value(); }, std::chrono::seconds(30),
                          std::chrono::milliseconds(20));
}

TEST(KillResume, ARunKilledAtRandomMomentsResumesToTheUninterruptedResult) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 4000, 300);

  // The uninterrupted run: its metrics, its steps, and how long its training takes (to place the kills).
  const pid_t plain_pid = spawn_quietly(train_args(dir / "data", dir / "plain.sqlite"));
  ASSERT_TRUE(wait_for_run(dir / "plain.sqlite"));
  const auto recorded = Clock::now();
  int plain_status = 0;
  ASSERT_EQ(::waitpid(plain_pid, &plain_status, 0), plain_pid);
  ASSERT_TRUE(WIFEXITED(plain_status) && WEXITSTATUS(plain_status) == 0);
  const double seconds = std::chrono::duration<double>(Clock::now() - recorded).count();
  const std::vector<std::int64_t> expected_steps = checked_loss_steps(dir / "plain.sqlite", 1);
  ASSERT_GT(expected_steps.size(), 1000u);
  const auto expected = RunStore(dir / "plain.sqlite").evaluations(1);

  std::mt19937_64 rng(20261123);
  std::uniform_real_distribution<double> when(0.0, 0.8);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::filesystem::path db = dir / ("killed" + std::to_string(attempt) + ".sqlite");
    const double kill_after = when(rng) * seconds;
    SCOPED_TRACE("kill -9 " + std::to_string(kill_after) + " s after the run was recorded (uninterrupted: " + std::to_string(seconds) + " s)");
    const pid_t trainer = spawn_quietly(train_args(dir / "data", db));
    ASSERT_GT(trainer, 0);
    ASSERT_TRUE(wait_for_run(db));
    std::this_thread::sleep_for(std::chrono::duration<double>(kill_after));
    ASSERT_EQ(::kill(trainer, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(trainer, &status, 0), trainer);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before the kill: the kill time is off";

    const auto errors = dir / "resume.err";
    const auto resumed =
        test::run_command(std::string(XMC_CLI_PATH) + " train --resume 1 --db '" + db.string() + "' --json 2>'" + errors.string() + "'", false);
    std::ifstream error_text(errors);
    ASSERT_EQ(resumed.exit_code, 0) << std::string(std::istreambuf_iterator<char>(error_text), {});
    EXPECT_EQ(nlohmann::json::parse(resumed.last_line())["status"], "completed");
    // Every evaluation (each epoch's, in every metric) equals the uninterrupted run's, bit for bit.
    const auto got = RunStore(db).evaluations(1);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].metric, expected[i].metric);
      EXPECT_EQ(got[i].step, expected[i].step);
      EXPECT_DOUBLE_EQ(got[i].value, expected[i].value) << got[i].metric << " at step " << got[i].step;
    }
    EXPECT_EQ(checked_loss_steps(db, 1), expected_steps) << "every step once, none missing";
    EXPECT_EQ(RunStore(db).get_run(1).last_error, "") << "a completed run carries no earlier error";
  }
}

// kill -9 at fixed points of a checkpoint's write (XMC_KILL_AT, atomic_file.cpp): its temporary file written but
// not synced, synced but not renamed, renamed but its folder not synced. Each resumes to the uninterrupted run's
// evaluations, bit for bit, every step stored once, no temporary file left behind.
TEST(KillResume, AKillAtEachPointOfACheckpointWriteResumesToTheUninterruptedResult) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 4, 600, 100);
  auto command = [&](const std::filesystem::path& db) {
    std::string line;
    for (const std::string& a : train_args(dir / "data", db)) line += "'" + a + "' ";
    return line;
  };
  ASSERT_EQ(test::run_command(command(dir / "plain.sqlite")).exit_code, 0);
  const auto expected = RunStore(dir / "plain.sqlite").evaluations(1);
  const std::vector<std::int64_t> expected_steps = checked_loss_steps(dir / "plain.sqlite", 1);
  ASSERT_GT(expected_steps.size(), 150u) << "3 epochs of 75 steps: checkpoints at steps 40, 80, ...";
  for (const std::string stage : {"before-sync", "before-rename", "after-rename"}) {
    SCOPED_TRACE(stage);
    const std::filesystem::path db = dir / (stage + ".sqlite");
    const auto killed = test::run_command("XMC_KILL_AT=" + stage + ":checkpoint.pt:2 " + command(db) + "; echo exit=$?");
    ASSERT_NE(killed.output.find("exit=137"), std::string::npos) << "killed by SIGKILL at the second checkpoint: " << killed.output;
    const auto resumed = test::run_command(std::string(XMC_CLI_PATH) + " train --resume 1 --db '" + db.string() + "' --json", false);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_EQ(nlohmann::json::parse(resumed.last_line())["status"], "completed");
    const auto got = RunStore(db).evaluations(1);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].metric, expected[i].metric);
      EXPECT_DOUBLE_EQ(got[i].value, expected[i].value) << got[i].metric << " at step " << got[i].step;
    }
    EXPECT_EQ(checked_loss_steps(db, 1), expected_steps) << "every step once, none missing";
    for (const auto& entry : std::filesystem::recursive_directory_iterator(db.string() + ".artifacts"))
      EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path() << " was left behind";
  }
}

}  // namespace
}  // namespace xmc

namespace xmc {

// A file-size limit (ulimit -f: a quota) reached while the checkpoint is written. It used to kill the process
// with SIGXFSZ, without a word. Then LibTorch's writer aborted it ("terminate called ... unexpected pos").
// Now it is a one-line error naming the checkpoint and the cause. The run is stored as failed, no temporary
// file is left behind, and the run restarts once the limit is gone.
TEST(StorageFaults, AFileSizeLimitAtTheCheckpointIsANamedErrorAndTheRunRestarts) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 9, 400, 120, /*noise_words=*/4000);
  const auto db = dir / "runs.sqlite";
  const std::string train = std::string(XMC_CLI_PATH) + " train --db " + db.string() + " --set dataset=" + (dir / "data").string() +
                            " --set encoder.dim=64 --set epochs=2 --set threads=1";
  // 512-byte blocks (dash): 800 KB, room for the store and the vocabulary but not the checkpoint's tables.
  const test::CommandResult limited = test::run_command("ulimit -f 1600 && exec " + train);
  EXPECT_EQ(limited.exit_code, 1) << limited.output;
  EXPECT_NE(limited.output.find("checkpoint.pt: cannot write the checkpoint: File too large"), std::string::npos) << limited.output;
  EXPECT_EQ(limited.output.find("terminate called"), std::string::npos) << limited.output;
  {
    const RunStore store(db);
    const RunInfo run = store.get_run(1);
    EXPECT_EQ(run.status, RunStatus::Failed);
    EXPECT_NE(run.last_error.find("File too large"), std::string::npos) << run.last_error;
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path() << " was left behind";
  const test::CommandResult again = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db.string() + " --resume 1 --restart");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(RunStore(db).get_run(1).status, RunStatus::Completed);
}

}  // namespace xmc

namespace xmc {

// The exports and the store under a file-size limit (ulimit -f). The outputs used to fail with "write
// failed (disk full?)" or, for reports, "Unknown error"; a store whose -shm file could not grow was called
// "not a run store". Each now names the file and the cause, and leaves no file or temporary behind.
TEST(StorageFaults, ExportsAndTheStoreUnderAFileSizeLimitNameTheFileAndTheCause) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 5, 300, 1000, /*noise_words=*/200);
  const auto db = dir / "runs.sqlite";
  const std::string xmc = std::string(XMC_CLI_PATH);
  ASSERT_EQ(test::run_command(xmc + " train --db " + db.string() + " --set dataset=" + (dir / "data").string() +
                              " --set encoder.dim=64 --set epochs=1 --set threads=1 --set eval.every=0")
                .exit_code,
            0);
  const auto out = dir / "out";
  std::filesystem::create_directories(out);
  const std::string queries = (dir / "data" / "tst.raw.txt").string();
  // 80 blocks of 512 bytes (dash's ulimit): room for the store's -shm file (32 KiB), not for these outputs
  // (1000 queries: 20 labels each, 64 floats each, a report with its plots).
  const std::string limited = "ulimit -f 80 && exec " + xmc;
  const std::string limit_words = "File too large: the process may write files of at most 40960 bytes (ulimit -f, a quota)";
  for (const auto& [command, file] : std::vector<std::pair<std::string, std::string>>{
           {" predict --db " + db.string() + " --run 1 --top 20 --input " + queries + " --out ", "pred.txt"},
           {" embed --db " + db.string() + " --run 1 --input " + queries + " --out ", "vectors.npy"},
           {" report --db " + db.string() + " --run 1 --out ", "report.html"}}) {
    const test::CommandResult r = test::run_command(limited + command + (out / file).string());
    EXPECT_EQ(r.exit_code, 1) << file << ": " << r.output;
    EXPECT_NE(r.output.find((out / file).string() + ": "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(limit_words), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("disk full?"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("Unknown error"), std::string::npos) << r.output;
    EXPECT_TRUE(std::filesystem::is_empty(out)) << file << " left a file behind";
  }
  // 8 blocks: the store's -shm file cannot be made. A store it is, which this process cannot use now.
  const test::CommandResult r = test::run_command("ulimit -f 8 && exec " + xmc + " runs --db " + db.string() + " list");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(db.string() + ": cannot read the run store: disk I/O error (File too large"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("is not a run store"), std::string::npos) << r.output;
}

}  // namespace xmc

namespace xmc {
namespace {

/// Runs shell scripts with a small tmpfs of their own mounted at `folder` (a real file system that fills up,
/// where the tests above only limit the file size): in a private mount namespace, as root or as a user mapped
/// to root. Empty `how()` when this machine allows neither: the tests then skip, saying so.
class FullDisk {
 public:
  explicit FullDisk(std::filesystem::path folder) : folder_(std::move(folder)) {
    std::filesystem::create_directories(folder_);
    for (const char* wrapper : {"unshare --mount sh -c ", "unshare --user --map-root-user --mount sh -c "}) {
      if (test::run_command(std::string(wrapper) + "'mount -t tmpfs -o size=64k tmpfs " + folder_.string() + "' 2>/dev/null").exit_code == 0) {
        how_ = wrapper;
        break;
      }
    }
  }
  const std::string& how() const { return how_; }
  /// `script` (sh) after mounting a tmpfs of `kib` KiB at the folder; it is gone when the script ends.
  test::CommandResult run(int kib, const std::string& script) const {
    const std::string body = "set -u; mount -t tmpfs -o size=" + std::to_string(kib) + "k tmpfs " + folder_.string() + " || exit 99; " + script;
    std::string quoted;  // body in single quotes for sh -c
    for (const char c : body) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return test::run_command(how_ + "'" + quoted + "'");
  }

 private:
  std::filesystem::path folder_;
  std::string how_;
};

/// The lines after the line "[name]" of a script's output, up to the next line that starts with '['.
std::string section(const std::string& output, const std::string& name) {
  std::istringstream lines(output);
  std::string line, text;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (inside && !line.empty() && line.front() == '[') break;
    if (inside) text += line + "\n";
    if (line == "[" + name + "]") inside = true;
  }
  return text;
}

}  // namespace

// A full file system (a real one: a small tmpfs), where the tests above use a file-size limit. The checkpoint
// that does not fit is a one-line error naming it, the cause and the space there is; the run is stored as
// failed, nothing temporary stays, and once there is room it restarts and completes. When the store itself
// cannot grow, the error names the store and the free space, and the store stays whole. An export that does
// not fit leaves no file.
TEST(StorageFaults, AFullFileSystemIsANamedErrorAndTheRunsSurvive) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 9, 400, 120, /*noise_words=*/4000);
  const FullDisk disk(dir / "full");
  if (disk.how().empty()) GTEST_SKIP() << "this machine lets this process mount no tmpfs (no mount namespace)";
  const std::string full = (dir / "full").string(), db = full + "/runs.sqlite", xmc = std::string(XMC_CLI_PATH);
  const std::string train = xmc + " train --db " + db + " --set dataset=" + (dir / "data").string() +
                            " --set encoder.dim=64 --set epochs=2 --set threads=1";
  // 700 KiB: the store and the vocabulary fit, the checkpoint's tables (4000 words × 64 floats, twice) do not.
  const test::CommandResult checkpoint = disk.run(
      700, "echo '[train]'; " + train + " 2>&1; echo \"[exit $?]\"; echo '[left]'; find " + full + " -name '*.tmp*'; echo '[show]'; " + xmc +
               " runs --db " + db + " show 1 --json 2>&1 | tail -1; mount -o remount,size=64m " + full + "; echo '[restart]'; " + xmc +
               " train --db " + db + " --resume 1 --restart 2>&1 | tail -1; echo \"[exit2 $?]\"");
  ASSERT_NE(checkpoint.exit_code, 99) << checkpoint.output;
  const std::string trained = section(checkpoint.output, "train");
  EXPECT_NE(trained.find("checkpoint.pt: cannot write the checkpoint: No space left on device: " + full + "/runs.sqlite.artifacts/1 has "),
            std::string::npos) << checkpoint.output;
  EXPECT_NE(trained.find("bytes free; this file takes "), std::string::npos) << trained;
  EXPECT_EQ(trained.find("terminate called"), std::string::npos) << trained;
  EXPECT_NE(checkpoint.output.find("[exit 1]"), std::string::npos) << checkpoint.output;
  EXPECT_EQ(section(checkpoint.output, "left"), "") << "temporaries left behind";
  const nlohmann::json shown = nlohmann::json::parse(section(checkpoint.output, "show"), nullptr, false);
  ASSERT_TRUE(shown.is_object()) << checkpoint.output;
  EXPECT_EQ(shown.value("status", ""), "failed");
  EXPECT_NE(shown.value("last_error", "").find("No space left on device"), std::string::npos) << shown.dump();
  EXPECT_NE(section(checkpoint.output, "restart").find("run 1 completed"), std::string::npos) << checkpoint.output;
  EXPECT_NE(checkpoint.output.find("[exit2 0]"), std::string::npos) << checkpoint.output;

  // The store fills while steps are recorded (no checkpoints, 50 epochs of batches of 8): the write that does
  // not fit is refused as a whole, the run fails naming the store and the space, and the store stays sound.
  const test::CommandResult store = disk.run(
      300, "echo '[train]'; " + xmc + " train --db " + db + " --set dataset=" + (dir / "data").string() +
               " --set encoder.dim=8 --set epochs=50 --set batch_size=8 --set threads=1 --set checkpoint.every=0 --set eval.every=0 2>&1 | tail -1;"
               " mount -o remount,size=64m " + full + "; echo '[list]'; " + xmc + " runs --db " + db + " list 2>&1");
  ASSERT_NE(store.exit_code, 99) << store.output;
  // Whichever write meets the full disk first (the steps' scalars, a heartbeat) names the store and the space.
  EXPECT_NE(section(store.output, "train").find("run store " + db + ": "), std::string::npos) << store.output;
  EXPECT_NE(section(store.output, "train").find(" failed: database or disk is full (No space left on device: " + full + " has "), std::string::npos)
      << store.output;
  EXPECT_NE(section(store.output, "train").find("the store is as it was before this write"), std::string::npos) << store.output;
  EXPECT_NE(section(store.output, "list").find("failed"), std::string::npos) << store.output;  // readable, the failure recorded

  // Exports on a full file system (another store, on the roomy test folder): named, and nothing is left there.
  const auto roomy = dir / "roomy.sqlite";
  ASSERT_EQ(test::run_command(xmc + " train --db " + roomy.string() + " --set dataset=" + (dir / "data").string() +
                              " --set encoder.dim=16 --set epochs=1 --set threads=1 --set eval.every=0")
                .exit_code,
            0);
  const test::CommandResult exported = disk.run(
      4, "echo '[predict]'; " + xmc + " predict --db " + roomy.string() + " --run 1 --top 9 --input " + (dir / "data" / "tst.raw.txt").string() +
              " --out " + full + "/pred.txt 2>&1 | tail -1; echo '[left]'; ls -A " + full);
  ASSERT_NE(exported.exit_code, 99) << exported.output;
  EXPECT_NE(section(exported.output, "predict").find(full + "/pred.txt: write failed: No space left on device: " + full + " has "),
            std::string::npos) << exported.output;
  EXPECT_EQ(section(exported.output, "left"), "") << exported.output;
}

}  // namespace xmc
