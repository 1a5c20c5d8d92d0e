// RunStore: round trips of every table, status handling, schema versioning, and two-process use
// (a live follower and the orphaned-run reaper), as the GUI and the trainer use it.
#include "engine/store/run_store.h"

#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/version.h"
#include "engine/store/run_files.h"
#include "engine/store/store_schema.h"

namespace fs = std::filesystem;
using xmc::RunStatus;
using xmc::RunStore;

namespace {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("xmc_store_test_" + std::to_string(getpid()) + "_" +
                                        std::to_string(counter++) + "_" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

class RunStoreTest : public ::testing::Test {
 protected:
  TempDir tmp;
  fs::path db = tmp.path() / "runs.db";

  std::int64_t count_rows(const std::string& table, std::int64_t run) {
    SQLite::Database raw(db.string(), SQLite::OPEN_READONLY);
    SQLite::Statement q(raw, "SELECT count(*) FROM " + table + " WHERE run = ?");
    q.bind(1, run);
    q.executeStep();
    return q.getColumn(0).getInt64();
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

xmc::NewRun new_run(const std::string& name) {
  xmc::NewRun r;
  r.name = name;
  r.config_json = R"({"method":"ngame","lr":0.001})";
  r.dataset_path = "/data/LF-AmazonTitles-131K";
  r.dataset_fingerprint = "sha256:abc";
  r.device = "cuda:0";
  return r;
}

/// Runs `body` in a forked child whose exit code is 0 when body returned and 1 when it threw
/// (the error goes to stderr). The child never returns into the test framework.
pid_t fork_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child process %d: %s\n", static_cast<int>(getpid()), e.what());
      code = 1;
    } catch (...) {
      code = 1;
    }
    std::fflush(stderr);
    _exit(code);
  }
  return pid;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const xmc::Error& e) {
    return e.what();
  }
  return "(no xmc::Error thrown)";
}

// ---------------------------------------------------------------------------------------------------------

TEST(RunStatusNames, RoundTripAndUnknownIsAnError) {
  for (RunStatus s : {RunStatus::Created, RunStatus::Running, RunStatus::Paused, RunStatus::Completed,
                      RunStatus::Failed, RunStatus::Stopped})
    EXPECT_EQ(xmc::run_status_from_string(xmc::to_string(s)), s);
  EXPECT_EQ(xmc::to_string(RunStatus::Completed), "completed");
  EXPECT_NE(error_of([] { xmc::run_status_from_string("finished"); }).find("'finished'"), std::string::npos);
}

TEST_F(RunStoreTest, FreshStoreIsWalAtCurrentSchemaInNewFolder) {
  const fs::path nested = tmp.path() / "a" / "b" / "runs.db";
  {
    RunStore store(nested);
    EXPECT_EQ(store.path(), nested);
    EXPECT_TRUE(store.list_runs().empty());
  }
  SQLite::Database raw(nested.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), RunStore::kSchemaVersion);
  for (const char* table : {"runs", "scalars", "evaluations", "decile_tables", "artifacts", "tsne_snapshots"})
    EXPECT_TRUE(raw.tableExists(table)) << table;
}

TEST_F(RunStoreTest, CreateRunRecordsOwnerConfigAndTimes) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("ngame on amazon"));
  const xmc::RunInfo r = store.get_run(id);
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.name, "ngame on amazon");
  EXPECT_EQ(r.status, RunStatus::Created);
  EXPECT_EQ(r.config_json, R"({"method":"ngame","lr":0.001})");
  EXPECT_EQ(r.dataset_path, "/data/LF-AmazonTitles-131K");
  EXPECT_EQ(r.dataset_fingerprint, "sha256:abc");
  EXPECT_EQ(r.device, "cuda:0");
  EXPECT_EQ(r.code_version, xmc::kCodeVersion);
  EXPECT_EQ(r.host, hostname());
  EXPECT_EQ(r.pid, getpid());
  EXPECT_EQ(r.last_error, "");
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  EXPECT_TRUE(std::regex_match(r.created, iso)) << r.created;
  EXPECT_EQ(r.updated, r.created);

  xmc::NewRun unnamed;
  unnamed.config_json = "";
  const std::int64_t id2 = store.create_run(unnamed);
  EXPECT_EQ(store.get_run(id2).name, "run " + std::to_string(id2));
  EXPECT_EQ(store.get_run(id2).config_json, "{}");

  xmc::NewRun bad = new_run("bad");
  bad.config_json = "{\"lr\": ";
  const std::string err = error_of([&] { store.create_run(bad); });
  EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
  EXPECT_NE(err.find(db.string()), std::string::npos) << err;
  EXPECT_EQ(store.list_runs().size(), 2u);
}

// The store finds runs by their config's method without the caller reading every run (the Predictor looks for
// IRENE runs this way); a config without a method, or of another method, is not one of them.
std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A damaged store is refused by name and left byte for byte as it was: a dropped table is not recreated (a
// migration or a listing would have written to it), and pages SQLite's quick_check finds broken stop the open.
TEST_F(RunStoreTest, ADamagedStoreIsRefusedAndNeverWritten) {
  {
    RunStore store(db);
    store.create_run(new_run("kept"));
  }
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA foreign_keys = OFF");
    raw.exec("DROP TABLE run_tags");
    raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  const std::string before = file_bytes(db);
  const std::string message = error_of([&] { RunStore again(db); });
  EXPECT_NE(message.find(db.string() + ": is a damaged run store: the table(s) run_tags of schema version"), std::string::npos) << message;
  EXPECT_NE(message.find("left unchanged"), std::string::npos) << message;
  EXPECT_EQ(file_bytes(db), before) << "the refusal wrote to the store";

  // A broken b-tree page in an otherwise well-formed store.
  const auto other = db.parent_path() / "pages.sqlite";
  {
    RunStore store(other);
    for (int i = 0; i < 40; ++i) store.create_run(new_run("run " + std::to_string(i)));
    store.add_scalars(1, [] {
      std::vector<xmc::ScalarPoint> points;
      for (int s = 0; s < 5000; ++s) points.push_back({s, 0, "loss", 1.0 / (s + 1), 0});
      return points;
    }());
  }
  std::int64_t page_size = 0, scalars_root = 0;
  {
    SQLite::Database raw(other.string(), SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    page_size = raw.execAndGet("PRAGMA page_size").getInt64();
    scalars_root = raw.execAndGet("SELECT rootpage FROM sqlite_master WHERE name = 'scalars'").getInt64();
  }
  std::string bytes = file_bytes(other);
  ASSERT_GT(scalars_root, 1);
  // The scalars tree's root page gets a page type no b-tree page has (2, 5, 10 or 13 are the valid ones).
  bytes[static_cast<std::size_t>((scalars_root - 1) * page_size)] = static_cast<char>(0xA5);
  { std::ofstream(other, std::ios::binary | std::ios::trunc) << bytes; }
  const std::string damaged = error_of([&] { RunStore again(other); });
  EXPECT_NE(damaged.find(other.string()), std::string::npos) << damaged;
  EXPECT_NE(damaged.find("damaged"), std::string::npos) << damaged;
  EXPECT_EQ(file_bytes(other), bytes);
}

TEST_F(RunStoreTest, RunsOfMethodsAreFoundByTheStoredConfig) {
  RunStore store(db);
  const auto with_config = [&](const std::string& name, const std::string& config) {
    xmc::NewRun run = new_run(name);
    run.config_json = config;
    return store.create_run(run);
  };
  const std::int64_t irene_1 = with_config("a", R"({"method":"irene","irene":{"base_run":1}})");
  with_config("b", R"({"method":"ngame"})");
  with_config("c", "{}");
  with_config("d", R"({"methods":"irene","note":"method irene"})");
  const std::int64_t irene_2 = with_config("e", R"({"lr":0.1,"method":"irene"})");
  const std::int64_t dexml = with_config("f", R"({"method":"dexml"})");
  std::vector<std::int64_t> ids;
  for (const auto& run : store.runs_of_methods({"irene"})) ids.push_back(run.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{irene_2, irene_1})) << "newest first";
  ids.clear();
  for (const auto& run : store.runs_of_methods({"dexml", "irene"})) ids.push_back(run.id);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{dexml, irene_2, irene_1}));
  EXPECT_TRUE(store.runs_of_methods({}).empty());
  EXPECT_TRUE(store.runs_of_methods({"unidec"}).empty());
}

TEST_F(RunStoreTest, NotesAndTagsAreKeptCheckedAndGoWithTheRun) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("tagged"));
  const std::int64_t other = store.create_run(new_run("other"));
  EXPECT_TRUE(store.get_run(id).tags.empty());
  EXPECT_EQ(store.get_run(id).notes, "");
  store.add_tags(id, {"sweep-3", "baseline", "baseline"});
  store.add_tags(id, {"ünïcode tag"});
  store.set_notes(id, "first line\nsecond line");
  store.add_tags(other, {"baseline"});
  {
    RunStore reopened(db);
    const xmc::RunInfo r = reopened.get_run(id);
    EXPECT_EQ(r.tags, (std::vector<std::string>{"baseline", "sweep-3", "ünïcode tag"}));  // sorted, once each
    EXPECT_EQ(r.notes, "first line\nsecond line");
    EXPECT_EQ(reopened.list_runs().front().tags, std::vector<std::string>{"baseline"});  // newest first: other
  }
  store.remove_tags(id, {"sweep-3", "never-there"});
  EXPECT_EQ(store.get_run(id).tags, (std::vector<std::string>{"baseline", "ünïcode tag"}));
  // What cannot be a tag is refused, naming it, and nothing of the list is added.
  for (const std::string& bad : {std::string(), std::string(" padded"), std::string("two\nlines"), std::string(65, 'x'), std::string("bad\xff")}) {
    const std::string err = error_of([&] { store.add_tags(id, {"fine", bad}); });
    EXPECT_NE(err.find("1 to 64 bytes of UTF-8"), std::string::npos) << err;
  }
  EXPECT_EQ(store.get_run(id).tags, (std::vector<std::string>{"baseline", "ünïcode tag"}));
  EXPECT_NE(error_of([&] { store.set_notes(id, "bad\xc3"); }).find("not UTF-8 text (byte 195 at offset 3)"), std::string::npos);
  EXPECT_NE(error_of([&] { store.add_tags(999, {"x"}); }).find("no run with id 999"), std::string::npos);
  store.delete_run(id);  // its tags go with it
  EXPECT_EQ(store.get_run(other).tags, std::vector<std::string>{"baseline"});
  store.delete_run(other);
  store.add_tags(store.create_run(new_run("fresh")), {"new"});
  EXPECT_EQ(store.list_runs().front().tags, std::vector<std::string>{"new"});
}

TEST_F(RunStoreTest, RunsOfOneNameAreNumbered) {
  // Runs of one preset share its name; the runs table must tell them apart.
  RunStore store(db);
  const std::int64_t a = store.create_run(new_run("unidec on bibtex"));
  const std::int64_t b = store.create_run(new_run("unidec on bibtex"));
  const std::int64_t c = store.create_run(new_run("unidec on bibtex"));
  const std::int64_t d = store.create_run(new_run("unidec on bibtex (2)"));  // taken by b: numbered again
  EXPECT_EQ(store.get_run(a).name, "unidec on bibtex");
  EXPECT_EQ(store.get_run(b).name, "unidec on bibtex (2)");
  EXPECT_EQ(store.get_run(c).name, "unidec on bibtex (3)");
  EXPECT_EQ(store.get_run(d).name, "unidec on bibtex (2) (2)");
  store.delete_run(a);  // the plain name is free again
  EXPECT_EQ(store.get_run(store.create_run(new_run("unidec on bibtex"))).name, "unidec on bibtex");
}

TEST_F(RunStoreTest, ListFindGetAndPersistAcrossReopen) {
  std::int64_t a = 0, b = 0, c = 0;
  {
    RunStore store(db);
    a = store.create_run(new_run("first"));
    b = store.create_run(new_run("second"));
    c = store.create_run(new_run("third"));
  }
  RunStore store(db);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].id, c);
  EXPECT_EQ(runs[1].id, b);
  EXPECT_EQ(runs[2].id, a);
  EXPECT_EQ(runs[0].name, "third");
  EXPECT_EQ(store.find_run(b)->name, "second");
  EXPECT_FALSE(store.find_run(c + 100).has_value());
  const std::string err = error_of([&] { store.get_run(c + 100); });
  EXPECT_NE(err.find("no run with id " + std::to_string(c + 100)), std::string::npos) << err;
}

TEST_F(RunStoreTest, StatusTransitionsKeepLastError) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  store.set_status(id, RunStatus::Running);
  EXPECT_EQ(store.get_run(id).status, RunStatus::Running);
  EXPECT_FALSE(store.get_run(id).heartbeat.empty());
  store.set_status(id, RunStatus::Paused);
  EXPECT_EQ(store.get_run(id).status, RunStatus::Paused);
  store.mark_failed(id, "CUDA out of memory at step 120");
  xmc::RunInfo r = store.get_run(id);
  EXPECT_EQ(r.status, RunStatus::Failed);
  EXPECT_EQ(r.last_error, "CUDA out of memory at step 120");
  // Resuming keeps the error of the earlier attempt visible; a new error replaces it.
  store.set_status(id, RunStatus::Running);
  EXPECT_EQ(store.get_run(id).last_error, "CUDA out of memory at step 120");
  store.set_status(id, RunStatus::Stopped, "stopped by the user");
  r = store.get_run(id);
  EXPECT_EQ(r.status, RunStatus::Stopped);
  EXPECT_EQ(r.last_error, "stopped by the user");
  store.mark_failed(id, "process 12 ended without finishing the run (crashed or killed)");
  store.set_status(id, RunStatus::Running);
  store.set_status(id, RunStatus::Stopped);
  EXPECT_EQ(store.get_run(id).last_error, "") << "an attempt that stopped cleanly is not described by the crash before it";
  store.set_status(id, RunStatus::Completed);
  EXPECT_EQ(store.get_run(id).status, RunStatus::Completed);
  EXPECT_EQ(store.get_run(id).last_error, "") << "a run that completed is not described by an earlier attempt's error";
  store.mark_failed(id, "");
  EXPECT_EQ(store.get_run(id).last_error, "failed without an error message");

  const std::string err = error_of([&] { store.set_status(id + 7, RunStatus::Running); });
  EXPECT_NE(err.find("no run with id " + std::to_string(id + 7)), std::string::npos) << err;
  EXPECT_THROW(store.heartbeat(id + 7), xmc::Error);
}

TEST_F(RunStoreTest, HeartbeatAdvances) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  const std::string before = store.get_run(id).heartbeat;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  store.heartbeat(id);
  const std::string after = store.get_run(id).heartbeat;
  EXPECT_GT(after, before);
}

TEST_F(RunStoreTest, RenameAndDeleteCascades) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("old name"));
  const std::int64_t other = store.create_run(new_run("keep me"));
  store.rename_run(id, "new name");
  EXPECT_EQ(store.get_run(id).name, "new name");
  EXPECT_THROW(store.rename_run(id, ""), xmc::Error);
  EXPECT_EQ(store.get_run(id).name, "new name");

  for (std::int64_t run : {id, other}) {
    store.add_scalars(run, {{1, 0.1, "loss", 2.0, 1.0}, {2, 0.2, "loss", 1.5, 2.0}});
    store.add_evaluation(run, 1.0, 2, {{"P@1", 0.4}});
    store.add_decile_table(run, 1.0, "P@5", std::vector<double>(10, 0.01));
    store.add_artifact(run, "checkpoint", "/ckpt/" + std::to_string(run) + ".pt");
    store.add_tsne_snapshot(run, 1.0, 3, "{}");
  }
  store.delete_run(id);
  EXPECT_FALSE(store.find_run(id).has_value());
  for (const char* table : {"scalars", "evaluations", "decile_tables", "artifacts", "tsne_snapshots"}) {
    EXPECT_EQ(count_rows(table, id), 0) << table;
    EXPECT_GT(count_rows(table, other), 0) << table;
  }
  EXPECT_EQ(store.scalars(other, "loss").size(), 2u);
  EXPECT_THROW(store.delete_run(id), xmc::Error);
  const std::string err = error_of([&] { store.add_scalars(id, {{3, 0.3, "loss", 1.0, 3.0}}); });
  EXPECT_NE(err.find("no run with id " + std::to_string(id)), std::string::npos) << err;
}

TEST_F(RunStoreTest, EachStoreKeepsItsRunsFilesInItsOwnFolder) {
  const fs::path other_db = tmp.path() / "other.db";
  const std::int64_t mine = RunStore(db).create_run(new_run("mine"));
  const std::int64_t theirs = RunStore(other_db).create_run(new_run("theirs"));
  ASSERT_EQ(mine, theirs);  // both stores number from 1
  EXPECT_EQ(xmc::run_directory(db, mine), tmp.path() / "runs.db.artifacts" / "1");
  EXPECT_EQ(xmc::run_directory(other_db, theirs), tmp.path() / "other.db.artifacts" / "1");
  // Same stem, other extension: still a folder of its own.
  EXPECT_NE(xmc::run_directory(tmp.path() / "runs.sqlite", 1), xmc::run_directory(db, 1));

  // Deleting a run removes its folder, and only its own.
  for (const fs::path& d : {xmc::run_directory(db, mine), xmc::run_directory(other_db, theirs)}) {
    fs::create_directories(d);
    std::ofstream(d / "checkpoint.pt") << "weights";
  }
  xmc::delete_run_and_files(db, mine);
  EXPECT_FALSE(RunStore(db).find_run(mine).has_value());
  EXPECT_FALSE(fs::exists(tmp.path() / "runs.db.artifacts" / "1"));
  EXPECT_TRUE(fs::exists(tmp.path() / "other.db.artifacts" / "1" / "checkpoint.pt"));
}

TEST_F(RunStoreTest, EarlierLayoutIsUsedOnlyForTheRunWhoseCheckpointItRecords) {
  // Earlier versions kept files in <folder>/runs/<id>, shared by every store of the folder.
  const fs::path legacy = tmp.path() / "runs" / "1";
  fs::create_directories(legacy);
  std::ofstream(legacy / "checkpoint.pt") << "weights";
  RunStore store(db);
  const std::int64_t recorded = store.create_run(new_run("written by an earlier version"));
  store.add_artifact(recorded, "checkpoint", (legacy / "checkpoint.pt").string());
  EXPECT_EQ(xmc::run_directory(db, recorded), legacy);
  // Another store's run 1 never picks that folder up.
  const fs::path other_db = tmp.path() / "other.db";
  const std::int64_t other = RunStore(other_db).create_run(new_run("new"));
  EXPECT_EQ(xmc::run_directory(other_db, other), tmp.path() / "other.db.artifacts" / "1");
}

TEST_F(RunStoreTest, ScalarsRoundTripFilterAndFollow) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  const double inf = std::numeric_limits<double>::infinity();
  store.add_scalars(id, {{0, 0.0, "loss", 3.25, 100.5}, {0, 0.0, "lr", 1e-3, 100.5}, {1, 0.5, "loss", 2.5, 101.0}});
  store.add_scalars(id, {{2, 1.0, "loss", std::nan(""), 102.0}, {2, 1.0, "lr", inf, 102.0}});

  const auto all = store.scalars(id);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].step, 0);
  EXPECT_EQ(all[0].key, "loss");
  EXPECT_DOUBLE_EQ(all[0].value, 3.25);
  EXPECT_DOUBLE_EQ(all[0].wall_time, 100.5);
  EXPECT_EQ(all[1].key, "lr");
  EXPECT_DOUBLE_EQ(all[1].value, 1e-3);
  EXPECT_EQ(all[2].step, 1);
  EXPECT_DOUBLE_EQ(all[2].epoch, 0.5);

  const auto loss = store.scalars(id, "loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[2].step, 2);
  EXPECT_TRUE(std::isnan(loss[2].value)) << "a diverged loss must read back as NaN, not 0";
  const auto lr_after = store.scalars(id, "lr", 0);
  ASSERT_EQ(lr_after.size(), 1u);
  EXPECT_EQ(lr_after[0].step, 2);
  EXPECT_EQ(lr_after[0].value, inf);
  EXPECT_TRUE(store.scalars(id, "loss", 2).empty());
  EXPECT_TRUE(store.scalars(id, "accuracy").empty());

  // A key prefix: "sys/" takes "sys/a" and "sys/b", not "sys" or "sys0" (the next byte after '/') or "syt".
  const std::int64_t other = store.create_run(new_run("prefixes"));
  store.add_scalars(other, {{3, 1.5, "sys", 1, 103.0}, {3, 1.5, "sys/b", 2, 103.0}, {4, 2.0, "sys0", 3, 104.0},
                         {4, 2.0, "sys/a", 4, 104.0}, {4, 2.0, "syt", 5, 104.0}});
  const auto sys = store.scalars_with_prefix(other, "sys/");
  ASSERT_EQ(sys.size(), 2u);
  EXPECT_EQ(sys[0].key, "sys/b");  // step order
  EXPECT_EQ(sys[1].key, "sys/a");
  EXPECT_TRUE(store.scalars_with_prefix(other, "loss/").empty());
  EXPECT_TRUE(store.scalars_with_prefix(id, "sys/").empty());  // another run's
  EXPECT_THROW(store.scalars_with_prefix(other, ""), xmc::Error);
  // Replacing: a key sampled again at a step keeps the later value; other keys and steps stay.
  store.replace_scalars(other, {{4, 2.0, "sys/a", 40, 105.0}, {5, 2.5, "sys/a", 50, 106.0}});
  const auto replaced = store.scalars(other, "sys/a");
  ASSERT_EQ(replaced.size(), 2u);
  EXPECT_EQ(replaced[0].value, 40);
  EXPECT_EQ(replaced[1].value, 50);
  EXPECT_EQ(store.scalars(other, "sys/b").size(), 1u);
  EXPECT_EQ(store.scalar_keys(id), (std::vector<std::string>{"loss", "lr"}));
}

TEST_F(RunStoreTest, AddScalarsIsAllOrNothing) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  std::vector<xmc::ScalarPoint> batch;
  for (int i = 0; i < 100; ++i) batch.push_back({i, 0.0, "loss", 1.0, 0.0});
  batch[60].key = "";
  const std::string err = error_of([&] { store.add_scalars(id, batch); });
  EXPECT_NE(err.find("empty key"), std::string::npos) << err;
  EXPECT_TRUE(store.scalars(id).empty()) << "the first 60 points of a failed batch must not be recorded";
  batch[60].key = "loss";
  store.add_scalars(id, batch);
  EXPECT_EQ(store.scalars(id).size(), 100u);
}

TEST_F(RunStoreTest, AddTenThousandScalarsTakesMilliseconds) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  std::vector<xmc::ScalarPoint> batch;
  for (int i = 0; i < 10000; ++i) batch.push_back({i, i / 1000.0, i % 2 ? "loss" : "lr", 1.0 / (i + 1), 1e9 + i});
  const auto t0 = std::chrono::steady_clock::now();
  store.add_scalars(id, batch);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("add_scalars of 10000 points: %.1f ms\n", ms);
  EXPECT_LT(ms, 300.0);
  const auto back = store.scalars(id, "loss");
  ASSERT_EQ(back.size(), 5000u);
  EXPECT_EQ(back.back().step, 9999);
  EXPECT_DOUBLE_EQ(back.back().value, 1.0 / 10000);
}

TEST_F(RunStoreTest, EvaluationsRoundTrip) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  store.add_evaluation(id, 2.0, 200, {{"P@1", 0.45}, {"P@5", 0.21}});
  store.add_evaluation(id, 1.0, 100, {{"P@1", 0.30}});
  const auto evals = store.evaluations(id);
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_EQ(evals[0].step, 100);
  EXPECT_DOUBLE_EQ(evals[0].epoch, 1.0);
  EXPECT_EQ(evals[0].metric, "P@1");
  EXPECT_DOUBLE_EQ(evals[0].value, 0.30);
  EXPECT_EQ(evals[1].metric, "P@1");
  EXPECT_DOUBLE_EQ(evals[1].value, 0.45);
  EXPECT_EQ(evals[2].metric, "P@5");
  EXPECT_DOUBLE_EQ(evals[2].value, 0.21);
  EXPECT_THROW(store.add_evaluation(id, 3.0, 300, {{"P@1", 0.5}, {"", 0.1}}), xmc::Error);
  EXPECT_EQ(store.evaluations(id).size(), 3u);
}

TEST_F(RunStoreTest, DecileTablesLatestReplaceAndValidate) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  EXPECT_TRUE(store.latest_decile_table(id, "P@5").empty());
  std::vector<double> e1, e2, e2b;
  for (int b = 0; b < 10; ++b) {
    e1.push_back(0.01 * (10 - b));
    e2.push_back(0.02 * (10 - b));
    e2b.push_back(0.03 * (10 - b));
  }
  store.add_decile_table(id, 2.0, "P@5", e2);
  store.add_decile_table(id, 1.0, "P@5", e1);  // older epoch added later: not the latest
  store.add_decile_table(id, 1.0, "P@1", e1);
  EXPECT_EQ(store.latest_decile_table(id, "P@5"), e2);
  EXPECT_EQ(store.latest_decile_table(id, "P@1"), e1);
  store.add_decile_table(id, 2.0, "P@5", e2b);  // re-evaluating epoch 2 replaces its table
  EXPECT_EQ(store.latest_decile_table(id, "P@5"), e2b);

  const auto tables = store.decile_tables(id, "P@5");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_DOUBLE_EQ(tables[0].epoch, 1.0);
  EXPECT_EQ(tables[0].bins, e1);
  EXPECT_EQ(tables[1].bins, e2b);
  EXPECT_EQ(store.decile_tables(id).size(), 3u);

  const std::string err = error_of([&] { store.add_decile_table(id, 3.0, "P@5", {0.1, 0.2}); });
  EXPECT_NE(err.find("2 bins"), std::string::npos) << err;
  EXPECT_EQ(store.latest_decile_table(id, "P@5"), e2b);
}

TEST_F(RunStoreTest, ArtifactsRoundTripAndLatest) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  EXPECT_FALSE(store.latest_artifact(id, "checkpoint").has_value());
  store.add_artifact(id, "checkpoint", "/runs/1/epoch1.pt");
  store.add_artifact(id, "index", "/runs/1/labels.hnsw");
  store.add_artifact(id, "checkpoint", "/runs/1/epoch2.pt");
  const auto arts = store.artifacts(id);
  ASSERT_EQ(arts.size(), 3u);
  EXPECT_EQ(arts[0].kind, "checkpoint");
  EXPECT_EQ(arts[0].path, "/runs/1/epoch1.pt");
  EXPECT_EQ(arts[1].kind, "index");
  EXPECT_EQ(arts[2].path, "/runs/1/epoch2.pt");
  EXPECT_FALSE(arts[2].created.empty());
  EXPECT_EQ(store.latest_artifact(id, "checkpoint"), "/runs/1/epoch2.pt");
  EXPECT_THROW(store.add_artifact(id, "", "/x"), xmc::Error);
}

TEST_F(RunStoreTest, TsneSnapshotLatestByEpoch) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("r"));
  EXPECT_FALSE(store.latest_tsne_snapshot(id).has_value());
  store.add_tsne_snapshot(id, 2.0, 17, R"({"points":[[0,1],[2,3]]})");
  store.add_tsne_snapshot(id, 1.0, 5, R"({"points":[]})");
  auto snap = store.latest_tsne_snapshot(id);
  ASSERT_TRUE(snap.has_value());
  EXPECT_DOUBLE_EQ(snap->epoch, 2.0);
  EXPECT_EQ(snap->query, 17);
  EXPECT_EQ(snap->payload_json, R"({"points":[[0,1],[2,3]]})");
  store.add_tsne_snapshot(id, 2.0, 18, R"({"points":[[9,9]]})");
  EXPECT_EQ(store.latest_tsne_snapshot(id)->query, 18);
  EXPECT_THROW(store.add_tsne_snapshot(id, 3.0, 1, "not json"), xmc::Error);
  EXPECT_EQ(store.latest_tsne_snapshot(id)->query, 18);
}

// --- schema versions ---------------------------------------------------------------------------------------

TEST_F(RunStoreTest, NewerSchemaIsAClearErrorAndFileIsUntouched) {
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("PRAGMA application_id = " + std::to_string(xmc::store::kApplicationId));
    raw.exec("CREATE TABLE runs (id INTEGER PRIMARY KEY, future_column TEXT)");
    raw.exec("PRAGMA user_version = 99");
  }
  const std::string before = slurp(db);
  std::string err;
  try {
    RunStore store(db);
    ADD_FAILURE() << "opened a store of schema version 99";
  } catch (const xmc::InputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find(db.string()), std::string::npos) << err;
  EXPECT_NE(err.find("99"), std::string::npos) << err;
  EXPECT_NE(err.find("newer"), std::string::npos) << err;
  EXPECT_EQ(slurp(db), before);
  SQLite::Database raw(db.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 99);
  EXPECT_NE(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
}

TEST_F(RunStoreTest, OtherProgramsFilesAreRefused) {
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
  }
  const std::string before = slurp(db);
  std::string err = error_of([&] { RunStore store(db); });
  EXPECT_NE(err.find("another program"), std::string::npos) << err;
  EXPECT_EQ(slurp(db), before);

  const fs::path text = tmp.path() / "notes.txt";
  std::ofstream(text) << "this is not a database, just some notes that are long enough to have a header\n";
  err = error_of([&] { RunStore store(text); });
  EXPECT_NE(err.find(text.string()), std::string::npos) << err;
  EXPECT_NE(err.find("not a run store"), std::string::npos) << err;

  err = error_of([&] { RunStore store(tmp.path()); });
  EXPECT_NE(err.find("is a folder"), std::string::npos) << err;
}

TEST_F(RunStoreTest, EmptyExistingFileBecomesAStore) {
  std::ofstream(db).close();
  ASSERT_EQ(fs::file_size(db), 0u);
  RunStore store(db);
  store.create_run(new_run("r"));
  EXPECT_EQ(store.list_runs().size(), 1u);
}

TEST_F(RunStoreTest, MigrateAppliesOnlyNewerStepsAndKeepsData) {
  using xmc::store::Migration;
  SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration v1[] = {{1, "create t", "CREATE TABLE t (a INTEGER NOT NULL);"}};
  EXPECT_EQ(xmc::store::migrate(raw, db.string(), v1), 1);
  raw.exec("INSERT INTO t (a) VALUES (5)");
  // Step 1 would fail if it ran again (t exists), so success shows only step 2 was applied.
  const Migration v2[] = {v1[0], {2, "add t.b", "ALTER TABLE t ADD COLUMN b INTEGER NOT NULL DEFAULT 7;"}};
  EXPECT_EQ(xmc::store::migrate(raw, db.string(), v2), 2);
  EXPECT_EQ(xmc::store::schema_version(raw), 2);
  SQLite::Statement q(raw, "SELECT a, b FROM t");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getInt(), 5);
  EXPECT_EQ(q.getColumn(1).getInt(), 7);
  // Opening with the older list of steps is the "newer database" error.
  EXPECT_THROW(xmc::store::migrate(raw, db.string(), v1), xmc::InputError);
}

TEST_F(RunStoreTest, FailedMigrationStepIsRolledBack) {
  using xmc::store::Migration;
  SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  const Migration steps[] = {
      {1, "create t", "CREATE TABLE t (a INTEGER);"},
      {2, "broken step", "CREATE TABLE u (x INTEGER); INSERT INTO no_such_table VALUES (1);"},
  };
  std::string err;
  try {
    xmc::store::migrate(raw, db.string(), steps);
  } catch (const xmc::InputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find(db.string()), std::string::npos) << err;
  EXPECT_NE(err.find("version 1 to 2"), std::string::npos) << err;
  EXPECT_NE(err.find("no_such_table"), std::string::npos) << err;
  EXPECT_EQ(xmc::store::schema_version(raw), 1);
  EXPECT_TRUE(raw.tableExists("t"));
  EXPECT_FALSE(raw.tableExists("u")) << "a failed step must leave nothing half-applied";
}

// A store written before runs kept a log (version 4) opens, keeps its run, and logs from then on; the log
// goes with its run.
TEST_F(RunStoreTest, AVersionFourStoreGainsTheRunLogAndKeepsItsRuns) {
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    EXPECT_EQ(xmc::store::migrate(raw, db.string(), xmc::store::run_store_migrations().first(4)), 4);
    raw.exec("INSERT INTO runs (name, created, updated, status) VALUES ('old run', '2026-01-01', '2026-01-01', 'completed')");
  }
  RunStore store(db);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs.front().name, "old run");
  EXPECT_TRUE(store.log(runs.front().id).empty());
  store.add_log_line(runs.front().id, 0, "epoch 1/2");
  store.add_log_line(runs.front().id, 12, "UniDEC: concat weight 0.8 (...)");
  const auto log = store.log(runs.front().id);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].message, "epoch 1/2");
  EXPECT_EQ(log[1].step, 12);
  EXPECT_EQ(log[1].message, "UniDEC: concat weight 0.8 (...)");
  EXPECT_LE(log[0].wall_time, log[1].wall_time);
  EXPECT_GT(log[0].wall_time, 1.7e9);  // seconds since 1970, written now
  store.delete_run(runs.front().id);
  SQLite::Database raw(db.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM run_log").getInt(), 0);
}

TEST(StoreSchema, ShippedStepsAreNumberedUpToSchemaVersion) {
  const auto steps = xmc::store::run_store_migrations();
  ASSERT_EQ(static_cast<int>(steps.size()), RunStore::kSchemaVersion);
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].version, static_cast<int>(i) + 1);
}

// --- two processes ----------------------------------------------------------------------------------------

TEST_F(RunStoreTest, FollowerProcessSeesEveryStepOfLiveWriterInOrder) {
  constexpr int kSteps = 200;
  std::int64_t id = 0;
  {
    RunStore setup(db);
    id = setup.create_run(new_run("live"));
  }  // no connection is open across fork()

  const pid_t writer = fork_child([&] {
    RunStore store(db);
    store.set_status(id, RunStatus::Running);
    for (int step = 0; step < kSteps; ++step) {
      store.add_scalars(id, {{step, step / 50.0, "loss", 10.0 / (step + 1), RunStore::now_seconds()},
                             {step, step / 50.0, "lr", 1e-3, RunStore::now_seconds()}});
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    store.set_status(id, RunStatus::Completed);
  });
  ASSERT_GT(writer, 0);

  RunStore store(db);
  std::int64_t last = -1;
  int polls_with_news = 0;
  bool in_order = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string follower_error;
  while (last < kSteps - 1 && std::chrono::steady_clock::now() < deadline) {
    try {
      const auto fresh = store.scalars(id, "loss", last);
      if (!fresh.empty()) ++polls_with_news;
      for (const auto& p : fresh) {
        if (p.step != last + 1 || p.value != 10.0 / static_cast<double>(p.step + 1)) in_order = false;
        last = p.step;
      }
      store.heartbeat(id);  // a second writer on the same file while the child writes
    } catch (const xmc::Error& e) {
      follower_error = e.what();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  EXPECT_EQ(wait_exit_code(writer), 0) << "the writer process failed (its error is on stderr)";
  EXPECT_EQ(follower_error, "");
  EXPECT_EQ(last, kSteps - 1) << "the follower did not see every step within 60 s";
  EXPECT_TRUE(in_order) << "steps arrived out of order, twice, or with wrong values";
  EXPECT_GE(polls_with_news, 2) << "the follower should see the run while it is being written";
  EXPECT_EQ(store.get_run(id).status, RunStatus::Completed);
  EXPECT_EQ(store.scalars(id, "lr").size(), static_cast<std::size_t>(kSteps));
}

TEST_F(RunStoreTest, ReapMarksRunOfDeadProcessFailed) {
  { RunStore setup(db); }
  const pid_t trainer = fork_child([&] {
    RunStore store(db);
    const std::int64_t done = store.create_run(new_run("finished"));
    store.set_status(done, RunStatus::Running);
    store.set_status(done, RunStatus::Completed);
    const std::int64_t id = store.create_run(new_run("crashes"));
    store.set_status(id, RunStatus::Running);
    store.add_scalars(id, {{0, 0.0, "loss", 1.0, 0.0}, {1, 0.1, "loss", 0.9, 0.0}});
    _exit(0);  // dies without finishing the run
  });
  ASSERT_GT(trainer, 0);
  ASSERT_EQ(wait_exit_code(trainer), 0);

  RunStore store(db);
  EXPECT_EQ(store.reap_orphaned_runs(), 1);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  const xmc::RunInfo& crashed = runs[0];
  EXPECT_EQ(crashed.name, "crashes");
  EXPECT_EQ(crashed.status, RunStatus::Failed);
  EXPECT_EQ(crashed.last_error,
            "process " + std::to_string(trainer) + " ended without finishing the run (crashed or killed)");
  EXPECT_EQ(store.scalars(crashed.id, "loss").size(), 2u) << "the steps recorded before the crash stay";
  EXPECT_EQ(runs[1].status, RunStatus::Completed);
  EXPECT_EQ(runs[1].last_error, "");
  EXPECT_EQ(store.reap_orphaned_runs(), 0);
}

TEST_F(RunStoreTest, ReapLeavesLiveAndOtherHostsRunsAlone) {
  const pid_t gone = fork_child([] {});
  ASSERT_EQ(wait_exit_code(gone), 0);

  RunStore store(db);
  const std::int64_t mine = store.create_run(new_run("this process"));
  store.set_status(mine, RunStatus::Running);
  const std::int64_t init = store.create_run(new_run("pid 1"));
  store.set_status(init, RunStatus::Running);
  const std::int64_t remote = store.create_run(new_run("other host"));
  store.set_status(remote, RunStatus::Running);
  const std::int64_t dead = store.create_run(new_run("dead"));
  store.set_status(dead, RunStatus::Running);
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE, 10000);
    raw.exec("UPDATE runs SET pid = 1 WHERE id = " + std::to_string(init));
    raw.exec("UPDATE runs SET pid = " + std::to_string(gone) + ", host = 'gpu-server-7' WHERE id = " +
             std::to_string(remote));
    raw.exec("UPDATE runs SET pid = " + std::to_string(gone) + " WHERE id = " + std::to_string(dead));
  }
  EXPECT_EQ(store.reap_orphaned_runs(), 1);
  EXPECT_EQ(store.get_run(mine).status, RunStatus::Running);
  EXPECT_EQ(store.get_run(init).status, RunStatus::Running);
  EXPECT_EQ(store.get_run(remote).status, RunStatus::Running);
  EXPECT_EQ(store.get_run(dead).status, RunStatus::Failed);
}

}  // namespace

// Claiming is one UPDATE: of two processes claiming a stopped run, exactly one wins, and the other is
// told which process on which host trains it.
TEST_F(RunStoreTest, ClaimingARunIsAtomicAndNamesTheOwner) {
  std::int64_t id = 0;
  {
    RunStore store(db);
    id = store.create_run(new_run("contested"));
    store.set_status(id, RunStatus::Stopped);
  }
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t other = fork_child([&] {
    RunStore store(db);
    char ok = 'n';
    try {
      store.claim_run(id);
      ok = 'y';
    } catch (const std::exception&) {
    }
    if (::write(pipe_fds[1], &ok, 1) != 1) _exit(3);
    ::pause();  // stays alive, owning the run if it won
  });
  ASSERT_GT(other, 0);
  char child_won = 0;
  ASSERT_EQ(::read(pipe_fds[0], &child_won, 1), 1);
  RunStore store(db);
  bool we_won = true;
  std::string refusal;
  try {
    store.claim_run(id);
  } catch (const xmc::ConfigError& e) {
    we_won = false;
    refusal = e.what();
  }
  ::kill(other, SIGKILL);
  wait_exit_code(other);
  EXPECT_NE(we_won, child_won == 'y') << "exactly one claimant wins";
  ASSERT_EQ(child_won, 'y');  // the child claimed first: it had the run before this process tried
  EXPECT_NE(refusal.find("run " + std::to_string(id) + " is being trained by process " + std::to_string(other) + " on host "), std::string::npos)
      << refusal;
  // Its process is gone now: the run is reaped as failed and can be claimed again.
  EXPECT_EQ(store.reap_orphaned_runs(), 1);
  EXPECT_NO_THROW(store.claim_run(id));
  EXPECT_EQ(store.get_run(id).status, RunStatus::Running);
  EXPECT_EQ(store.get_run(id).pid, ::getpid());
  store.set_status(id, RunStatus::Completed);
  EXPECT_THROW(store.claim_run(id), xmc::ConfigError);
}

TEST_F(RunStoreTest, DiscardAfterAResumedCheckpointKeepsExactlyWhatCameBeforeIt) {
  RunStore store(db);
  const std::int64_t id = store.create_run(new_run("resumed"));
  const std::int64_t other = store.create_run(new_run("untouched"));
  for (const std::int64_t run : {id, other}) {
    std::vector<xmc::ScalarPoint> points;
    for (std::int64_t step = 1; step <= 10; ++step) points.push_back({step, 0.1 * static_cast<double>(step), "loss", 1.0, 0.0});
    store.add_scalars(run, points);
    store.add_evaluation(run, 0.5, 5, {{"P@1", 0.3}});
    store.add_evaluation(run, 1.0, 10, {{"P@1", 0.4}});
    store.add_decile_table(run, 0.5, "P@5", std::vector<double>(10, 0.01));
    store.add_decile_table(run, 1.0, "P@5", std::vector<double>(10, 0.02));
    store.add_tsne_snapshot(run, 0.5, 0, "{}");
    store.add_tsne_snapshot(run, 1.0, 0, "{}");
    store.add_log_line(run, 0, "epoch 1/2");
    store.add_log_line(run, 5, "evaluating");
    store.add_log_line(run, 10, "evaluating");
  }
  store.discard_after(id, 5, 0.5);
  ASSERT_EQ(store.log(id).size(), 2u);  // the lines at steps 0 and 5
  EXPECT_EQ(store.log(id).back().step, 5);
  EXPECT_EQ(store.log(other).size(), 3u);
  const auto loss = store.scalars(id, "loss");
  ASSERT_EQ(loss.size(), 5u);
  EXPECT_EQ(loss.back().step, 5);
  ASSERT_EQ(store.evaluations(id).size(), 1u);
  EXPECT_EQ(store.evaluations(id)[0].step, 5);
  ASSERT_EQ(store.decile_tables(id).size(), 1u);
  EXPECT_DOUBLE_EQ(store.decile_tables(id)[0].epoch, 0.5);
  ASSERT_TRUE(store.latest_tsne_snapshot(id));
  EXPECT_DOUBLE_EQ(store.latest_tsne_snapshot(id)->epoch, 0.5);
  EXPECT_EQ(store.scalars(other, "loss").size(), 10u) << "another run's records stay";
  EXPECT_EQ(store.evaluations(other).size(), 2u);
  store.discard_after(id, 0, 0.0);
  EXPECT_TRUE(store.scalars(id).empty());
  EXPECT_TRUE(store.evaluations(id).empty());
}

// Schema 2 gives every store a random identity; a store of schema 1 gets one when upgraded, keeping its runs.
TEST_F(RunStoreTest, EveryStoreHasItsOwnIdentityAndOlderStoresGetOneOnUpgrade) {
  const auto other_db = db.parent_path() / "other.sqlite";
  const std::string a = RunStore(db).store_id();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_EQ(RunStore(db).store_id(), a) << "the identity is drawn once";
  EXPECT_NE(RunStore(other_db).store_id(), a);

  const auto v1_db = db.parent_path() / "v1.sqlite";
  {
    SQLite::Database raw(v1_db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    const auto steps = xmc::store::run_store_migrations();
    ASSERT_EQ(xmc::store::migrate(raw, v1_db.string(), steps.first(1)), 1);
    raw.exec("INSERT INTO runs (name, created, updated) VALUES ('old', '2026-01-01', '2026-01-01')");
  }
  RunStore upgraded(v1_db);
  EXPECT_EQ(upgraded.store_id().size(), 32u);
  ASSERT_EQ(upgraded.list_runs().size(), 1u);
  EXPECT_EQ(upgraded.list_runs()[0].name, "old");
}

namespace xmc {
namespace {

// Several processes may open one new store at once (a trainer creating it while the workbench or a test polls
// it, the ranks of a job). Each must see it before or after another's first migration, never half-way: with its
// tables but not yet its schema version it looked like another program's database and was refused.
TEST(RunStoreConcurrency, OpenersOfANewStoreAllSucceed) {
  TempDir tmp;
  for (int round = 0; round < 40; ++round) {
    const fs::path db = tmp.path() / ("new" + std::to_string(round) + ".db");
    std::atomic<int> ready{0};
    std::atomic<int> failures{0};
    std::string failure;
    std::vector<std::thread> openers;
    for (int t = 0; t < 4; ++t) {
      openers.emplace_back([&, t] {
        ++ready;
        while (ready.load() < 4) std::this_thread::yield();
        if (t > 0) std::this_thread::sleep_for(std::chrono::microseconds(200 * t));  // land inside another's open
        try {
          RunStore store(db);
        } catch (const std::exception& e) {
          if (failures++ == 0) failure = e.what();
        }
      });
    }
    for (auto& opener : openers) opener.join();
    ASSERT_EQ(failures.load(), 0) << "round " << round << ": " << failure;
  }
}

}  // namespace
}  // namespace xmc

namespace {

/// `source` seen through a folder this process cannot write: a read-only bind mount for root (whom
/// permission bits do not stop), the permission bits for anyone else. `view()` is empty where neither can be
/// made (a container without mount rights): the tests then skip, saying why.
class ReadOnlyView {
 public:
  explicit ReadOnlyView(const fs::path& source) : source_(source) {
    if (geteuid() != 0) {
      fs::permissions(source, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
      for (const auto& entry : fs::directory_iterator(source))
        fs::permissions(entry.path(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
      view_ = source;
      return;
    }
    const fs::path target = source.parent_path() / (source.filename().string() + "-ro");
    fs::create_directories(target);
    const std::string quoted_source = "'" + source.string() + "'", quoted_target = "'" + target.string() + "'";
    if (std::system(("mount --bind " + quoted_source + " " + quoted_target + " 2>/dev/null").c_str()) != 0) return;
    mounted_ = target;
    if (std::system(("mount -o remount,bind,ro " + quoted_target + " 2>/dev/null").c_str()) != 0) return;
    view_ = target;
  }
  ~ReadOnlyView() {
    if (!mounted_.empty()) {
      [[maybe_unused]] const int rc = std::system(("umount '" + mounted_.string() + "'").c_str());
    } else if (!view_.empty()) {
      fs::permissions(source_, fs::perms::owner_all, fs::perm_options::add);
    }
  }
  ReadOnlyView(const ReadOnlyView&) = delete;
  ReadOnlyView& operator=(const ReadOnlyView&) = delete;
  const fs::path& view() const { return view_; }

 private:
  fs::path source_, mounted_, view_;
};

}  // namespace

// A store on a read-only mount (an archive of past runs, a shared results disk) used to be refused as
// "not a run store: unable to open database file". It is read as it is, and every write is refused with
// the store's name and the cause; the file is never touched.
TEST_F(RunStoreTest, AReadOnlyStoreIsReadAndEveryWriteIsRefusedByName) {
  const fs::path folder = tmp.path() / "archive";
  std::int64_t id = 0;
  {
    RunStore store(folder / "runs.db");
    id = store.create_run(new_run("kept run"));
    store.set_status(id, RunStatus::Completed);
  }
  const std::string before = slurp(folder / "runs.db");
  ReadOnlyView read_only(folder);
  if (read_only.view().empty()) GTEST_SKIP() << "this machine lets root neither bind-mount nor be refused by permissions";
  const fs::path path = read_only.view() / "runs.db";
  {
    RunStore store(path);
    ASSERT_EQ(store.list_runs().size(), 1u);
    EXPECT_EQ(store.get_run(id).name, "kept run");
    EXPECT_EQ(store.get_run(id).status, RunStatus::Completed);
    const std::string create = error_of([&] { store.create_run(new_run("another")); });
    EXPECT_NE(create.find(path.string()), std::string::npos) << create;
    EXPECT_NE(create.find("cannot write to this run store"), std::string::npos) << create;
    EXPECT_TRUE(create.find("Read-only file system") != std::string::npos || create.find("Permission denied") != std::string::npos) << create;
    EXPECT_NE(error_of([&] { store.delete_run(id); }).find("cannot write to this run store"), std::string::npos);
    EXPECT_NE(error_of([&] { store.set_status(id, RunStatus::Failed, "x"); }).find("cannot write to this run store"), std::string::npos);
    EXPECT_EQ(store.get_run(id).status, RunStatus::Completed);
  }
  EXPECT_EQ(slurp(folder / "runs.db"), before);
  EXPECT_FALSE(fs::exists(folder / "runs.db-wal"));
  EXPECT_FALSE(fs::exists(folder / "runs.db-shm"));
}

// Committed changes can sit in the -wal file until a writer folds them in: reading the main file alone
// would show an older store, so such a store is refused, naming the -wal file.
TEST_F(RunStoreTest, AReadOnlyStoreWithUnappliedChangesIsRefusedNamingItsWalFile) {
  const fs::path folder = tmp.path() / "archive";
  {
    RunStore store(folder / "runs.db");
    store.create_run(new_run("kept run"));
  }
  std::ofstream(folder / "runs.db-wal", std::ios::binary) << std::string(4096, 'w');
  ReadOnlyView read_only(folder);
  if (read_only.view().empty()) GTEST_SKIP() << "this machine lets root neither bind-mount nor be refused by permissions";
  const fs::path path = read_only.view() / "runs.db";
  const std::string error = error_of([&] { RunStore store(path); });
  EXPECT_NE(error.find(path.string() + "-wal"), std::string::npos) << error;
  EXPECT_NE(error.find("copy both files to a writable folder"), std::string::npos) << error;
}
