#include "engine/store/run_store.h"

#include "engine/store/sqlite_text.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/core/utf8.h"
#include "engine/core/version.h"
#include "engine/core/write_failure.h"

namespace xmc {
namespace {

constexpr int kBusyTimeoutMs = 10'000;

constexpr const char* kRunColumns =
    "id, name, created, updated, status, config, dataset_path, dataset_fingerprint, code_version, host, device, "
    "last_error, heartbeat, pid, notes, (SELECT group_concat(tag, char(10)) FROM run_tags WHERE run_tags.run = runs.id)";

/// Current time as ISO-8601 UTC with milliseconds: sorts as text in time order.
std::string iso_now() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

/// SQLite stores NaN as NULL; read it back as NaN so a diverged value stays visible.
double real_or_nan(const SQLite::Column& column) {
  return column.isNull() ? std::numeric_limits<double>::quiet_NaN() : column.getDouble();
}

/// Resets a cached statement when the scope ends, so no read transaction stays open on it
/// (an open one would pin this connection to an old snapshot and block WAL checkpoints).
class StatementUse {
 public:
  explicit StatementUse(SQLite::Statement& statement) : statement_(statement) { statement_.tryReset(); }
  ~StatementUse() { statement_.tryReset(); }
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  SQLite::Statement* operator->() { return &statement_; }
  SQLite::Statement& operator*() { return statement_; }

 private:
  SQLite::Statement& statement_;
};

/// `text` with each byte that is not part of valid UTF-8 shown as '?' (for messages).
std::string shown_text(std::string text) {
  for (auto at = find_invalid_utf8(text); at != std::string::npos; at = find_invalid_utf8(text)) text[at] = '?';
  return text;
}

RunInfo read_run(SQLite::Statement& s) {
  RunInfo r;
  r.id = s.getColumn(0).getInt64();
  r.name = s.getColumn(1).getString();
  r.created = s.getColumn(2).getString();
  r.updated = s.getColumn(3).getString();
  r.status = run_status_from_string(s.getColumn(4).getString());
  r.config_json = s.getColumn(5).getString();
  r.dataset_path = s.getColumn(6).getString();
  r.dataset_fingerprint = s.getColumn(7).getString();
  r.code_version = s.getColumn(8).getString();
  r.host = s.getColumn(9).getString();
  r.device = s.getColumn(10).getString();
  r.last_error = s.getColumn(11).getString();
  r.heartbeat = s.getColumn(12).isNull() ? std::string() : s.getColumn(12).getString();
  r.pid = s.getColumn(13).getInt64();
  r.notes = s.getColumn(14).getString();
  if (!s.getColumn(15).isNull()) {
    const std::string joined = s.getColumn(15).getString();  // tags hold no line breaks
    for (std::size_t start = 0; start <= joined.size();) {
      const std::size_t end = std::min(joined.find('\n', start), joined.size());
      r.tags.push_back(joined.substr(start, end - start));
      start = end + 1;
    }
    std::sort(r.tags.begin(), r.tags.end());
  }
  return r;
}

}  // namespace

std::string to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Created: return "created";
    case RunStatus::Running: return "running";
    case RunStatus::Paused: return "paused";
    case RunStatus::Completed: return "completed";
    case RunStatus::Failed: return "failed";
    case RunStatus::Stopped: return "stopped";
  }
  throw Error("unknown run status " + std::to_string(static_cast<int>(status)));
}

RunStatus run_status_from_string(std::string_view text) {
  for (RunStatus s : {RunStatus::Created, RunStatus::Running, RunStatus::Paused, RunStatus::Completed,
                      RunStatus::Failed, RunStatus::Stopped}) {
    if (text == to_string(s)) return s;
  }
  throw Error("unknown run status '" + std::string(text) +
              "' (expected created, running, paused, completed, failed or stopped)");
}

struct RunStore::Impl {
  std::filesystem::path path;
  std::string path_text;
  std::string host = this_host();
  std::mutex mutex;
  std::string read_only;               ///< why the store cannot be written (empty: it can)
  std::optional<SQLite::Database> db;  // declared before the statements: destroyed after them
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> statements;

  /// A prepared statement for `sql`, compiled once per connection.
  SQLite::Statement& statement(const std::string& sql) {
    auto it = statements.find(sql);
    if (it == statements.end()) it = statements.emplace(sql, std::make_unique<SQLite::Statement>(*db, sql)).first;
    return *it->second;
  }

  [[noreturn]] void fail(const std::string& what, const std::exception& e) const {
    throw Error("run store " + path_text + ": " + what + " failed: " + e.what());
  }
  [[noreturn]] void no_run(const std::string& what, std::int64_t run) const {
    throw Error("run store " + path_text + ": cannot " + what + ": there is no run with id " + std::to_string(run));
  }

  bool run_exists(std::int64_t run) {
    StatementUse s(statement("SELECT 1 FROM runs WHERE id = ?1"));
    s->bind(1, run);
    return s->executeStep();
  }
  void require_run(const std::string& what, std::int64_t run) {
    if (!run_exists(run)) no_run(what, run);
  }

  /// Runs `body` in a BEGIN IMMEDIATE transaction (the write lock is taken up front, so a concurrent
  /// writer makes us wait up to the busy timeout instead of failing mid-transaction).
  template <class Body>
  void write(const std::string& what, Body&& body) {
    if (!read_only.empty())
      throw InputError(path_text, "cannot write to this run store (" + read_only + "), so " + what +
                                      " is not possible; runs can be listed, shown, evaluated and searched, but training, deleting, "
                                      "importing or tagging need a writable copy (copy the store with its run folders and pass --db)");
    try {
      SQLite::Transaction txn(*db, SQLite::TransactionBehavior::IMMEDIATE);
      body();
      txn.commit();
    } catch (const SQLite::Exception& e) {
      // "database or disk is full" says neither which: the file system's free space says (the transaction
      // rolled back, so the store holds what it held before).
      if (e.getErrorCode() == SQLITE_FULL)
        throw Error("run store " + path_text + ": " + what + " failed: " + e.what() + " (" + why_write_failed(path, 0, ENOSPC) +
                    "); the store is as it was before this write");
      fail(what, e);
    }
  }

  /// Runs a read-only `body`, turning SQLite errors into xmc::Error.
  template <class Body>
  auto read(const std::string& what, Body&& body) -> decltype(body()) {
    try {
      return body();
    } catch (const SQLite::Exception& e) {
      fail(what, e);
    }
  }

  std::optional<RunInfo> find_run(std::int64_t run) {
    return read("reading run " + std::to_string(run), [&]() -> std::optional<RunInfo> {
      StatementUse s(statement(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1"));
      s->bind(1, run);
      if (!s->executeStep()) return std::nullopt;
      return read_run(*s);
    });
  }

  void set_status(std::int64_t run, RunStatus status, const std::string& error) {
    const std::string what = "setting the status of run " + std::to_string(run) + " to " + to_string(status);
    write(what, [&] {
      StatementUse s(statement(
          "UPDATE runs SET status = ?1, updated = ?2,"
          // Completed or stopped cleanly: an earlier attempt's error no longer describes the run (while a
          // resumed attempt runs, it stays visible).
          " last_error = CASE WHEN ?3 <> '' THEN ?3 WHEN ?8 THEN '' ELSE last_error END,"
          " host = CASE WHEN ?4 THEN ?5 ELSE host END,"
          " pid = CASE WHEN ?4 THEN ?6 ELSE pid END,"
          " heartbeat = CASE WHEN ?4 THEN ?2 ELSE heartbeat END"
          " WHERE id = ?7"));
      const bool take_ownership = status == RunStatus::Running;
      s->bind(1, to_string(status));
      s->bind(2, iso_now());
      s->bind(3, error);
      s->bind(4, take_ownership ? 1 : 0);
      s->bind(5, host);
      s->bind(6, static_cast<std::int64_t>(getpid()));
      s->bind(7, run);
      s->bind(8, status == RunStatus::Completed || status == RunStatus::Stopped ? 1 : 0);
      if (s->exec() == 0) no_run("set the status of run " + std::to_string(run), run);
    });
  }
};

namespace {

/// Why an existing store cannot be written, or "": its file or its folder (where SQLite keeps the -wal and
/// -shm files beside it) is not writable, or sits on a read-only file system. access() answers for this
/// process, root included (a read-only mount refuses root too).
std::string why_read_only(const std::filesystem::path& db_path) {
  const std::filesystem::path folder = db_path.has_parent_path() ? db_path.parent_path() : std::filesystem::path(".");
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0) return std::strerror(EROFS);
  if (::access(db_path.c_str(), W_OK) != 0) return "the file: " + std::string(std::strerror(errno));
  if (::access(folder.c_str(), W_OK) != 0) return "its folder " + folder.string() + ": " + std::strerror(errno);
  return {};
}

/// `path` as an SQLite URI that opens it read-only and immutable: SQLite then reads a WAL-mode file without
/// the -shm file it could not create here.
std::string immutable_uri(const std::filesystem::path& path) { return sqlite_uri(path, "immutable=1"); }

}  // namespace

RunStore::RunStore(const std::filesystem::path& db_path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = db_path;
  m.path_text = db_path.string();
  std::error_code ec;
  if (db_path.has_parent_path() && !std::filesystem::exists(db_path.parent_path(), ec)) {
    std::filesystem::create_directories(db_path.parent_path(), ec);
    if (ec) throw InputError(m.path_text, "cannot create the run store's folder: " + ec.message());
  }
  if (std::filesystem::is_directory(db_path, ec))
    throw InputError(m.path_text, "is a folder; the run store must be a file such as runs.db");
  // A store that cannot be written (a read-only mount, an archive, another user's file) is opened for
  // reading: it lists, shows and serves predictions, and every write is refused by name (Impl::write).
  if (std::filesystem::exists(db_path, ec)) m.read_only = why_read_only(db_path);
  try {
    if (m.read_only.empty())
      m.db.emplace(m.path_text, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, kBusyTimeoutMs);
    else if (std::filesystem::file_size(db_path.string() + "-wal", ec) > 0 && !ec)
      // Committed transactions may still sit in the -wal file, which only a writer can fold back in.
      throw InputError(m.path_text, "cannot be written (" + m.read_only + ") and its last changes are still in " + m.path_text +
                                        "-wal, which only a writer can apply; copy both files to a writable folder");
    else
      m.db.emplace(immutable_uri(db_path), SQLite::OPEN_READONLY | SQLite::OPEN_URI, kBusyTimeoutMs);
  } catch (const SQLite::Exception& e) {
    throw InputError(m.path_text, std::string("cannot open the run store: ") + e.what() +
                                      (m.read_only.empty() ? "" : " (it cannot be written: " + m.read_only + ")"));
  }
  SQLite::Database& db = *m.db;

  // Identify the file before writing anything to it.
  int application_id = 0, version = 0, tables = 0;
  try {
    // One read snapshot for the three: a store another process is creating this moment is seen before or
    // after its first migration, never with its tables but not yet its version (another program's file).
    SQLite::Transaction snapshot(db);  // deferred, rolled back: nothing is written
    application_id = db.execAndGet("PRAGMA application_id").getInt();
    version = store::schema_version(db);
    tables = db.execAndGet("SELECT count(*) FROM sqlite_master").getInt();
  } catch (const SQLite::Exception& e) {
    if (!m.read_only.empty())  // e.g. a WAL store whose -wal file is left over and cannot be replayed here
      throw InputError(m.path_text, std::string("cannot read this run store, which cannot be written (") + m.read_only + "): " + e.what() +
                                        "; copy it with its -wal file to a writable folder");
    // Only a file SQLite cannot read as a database is "not a run store"; an I/O error (a file-size limit on the
    // -shm file, a full disk, a lock it cannot take) is a store this process cannot use now, and says why.
    if (const int code = e.getErrorCode(); code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN || code == SQLITE_PERM ||
                                           code == SQLITE_BUSY || code == SQLITE_LOCKED)
      throw InputError(m.path_text, std::string("cannot read the run store: ") + e.what() + " (" +
                                        why_write_failed(db_path, 0, ::sqlite3_system_errno(db.getHandle())) + ")");
    throw InputError(m.path_text, std::string("is not a run store: ") + e.what());
  }
  if (version == 0 && tables > 0)
    throw InputError(m.path_text,
                     "is an SQLite database of another program (it has tables but no run-store schema "
                     "version); choose a new file for the run store");
  if (version > 0 && application_id != store::kApplicationId)
    throw InputError(m.path_text, "is an SQLite database of another program (application_id " +
                                      std::to_string(application_id) + "), not an XMC run store");

  // A damaged store is refused before anything is written to it (a migration would rebuild what is missing).
  // (A store of a newer schema is refused by migrate(), naming its version.)
  if (version > 0 && version <= static_cast<int>(store::run_store_migrations().size())) {
    // SQLite's quick_check reads the whole file (~200 MB/s here): stores beyond kQuickCheckBytes get the table
    // check alone on open, which stays instant.
    constexpr std::uintmax_t kQuickCheckBytes = 512ull << 20;
    const std::uintmax_t bytes = std::filesystem::file_size(db_path, ec);
    store::check_intact(db, m.path_text, version, store::run_store_migrations(), /*quick_check=*/!ec && bytes <= kQuickCheckBytes);
  }
  if (!m.read_only.empty()) {  // read as it is: nothing to upgrade, no journal mode to switch
    if (version == 0)
      throw InputError(m.path_text, "is an empty file that cannot be written (" + m.read_only + "), not a run store");
    if (version < store::kSchemaVersion)
      throw InputError(m.path_text, "is a run store of an older schema (version " + std::to_string(version) +
                                        ") that cannot be written (" + m.read_only + ") to upgrade it; open it once from a writable folder");
  }
  // Migrations run with foreign keys off (the default), as SQLite's table-rebuild recipe requires. A read-only
  // store is at this schema (above) or newer, which migrate() refuses by name: it writes nothing there.
  store::migrate(db, m.path_text, store::run_store_migrations());

  try {
    if (m.read_only.empty() && db.execAndGet("PRAGMA journal_mode").getString() != "wal") {
      // The switch needs the file to itself; another process opening the new store at the same moment holds it
      // briefly, and this statement does not wait for it as others do: retry within the busy timeout.
      std::string mode;
      for (int waited_ms = 0;; waited_ms += 10) {
        try {
          mode = db.execAndGet("PRAGMA journal_mode = WAL").getString();
          break;
        } catch (const SQLite::Exception& e) {
          if (e.getErrorCode() != SQLITE_BUSY || waited_ms >= kBusyTimeoutMs) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
      if (mode != "wal")
        throw InputError(m.path_text, "cannot switch the run store to WAL journal mode (it stays in '" + mode +
                                          "' mode); keep the run store on a local disk");
    }
    if (m.read_only.empty()) db.exec("PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA foreign_keys = ON");
  } catch (const SQLite::Exception& e) {
    throw InputError(m.path_text, std::string("cannot set up the run store connection: ") + e.what());
  }
}

RunStore::~RunStore() = default;
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;

const std::filesystem::path& RunStore::path() const { return impl_->path; }

double RunStore::now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t RunStore::create_run(const NewRun& run) {
  Impl& m = *impl_;
  const std::string config = run.config_json.empty() ? std::string("{}") : run.config_json;
  if (!nlohmann::json::accept(config))
    throw Error("run store " + m.path_text + ": the configuration of new run '" + run.name +
                "' is not valid JSON");
  std::lock_guard lock(m.mutex);
  std::int64_t id = 0;
  m.write("creating run '" + run.name + "'", [&] {
    const std::string now = iso_now();
    // Runs of one preset would all be called alike: a name already taken gets " (2)", " (3)", ...
    std::string name = run.name;
    for (int n = 2; !name.empty(); ++n) {
      StatementUse taken(m.statement("SELECT 1 FROM runs WHERE name = ?1 LIMIT 1"));
      taken->bind(1, name);
      if (!taken->executeStep()) break;
      name = run.name + " (" + std::to_string(n) + ")";
    }
    {
      StatementUse s(m.statement(
          "INSERT INTO runs (name, created, updated, status, config, dataset_path, dataset_fingerprint,"
          " code_version, host, device, pid, heartbeat) VALUES (?1, ?2, ?2, 'created', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?2)"));
      s->bind(1, name);
      s->bind(2, now);
      s->bind(3, config);
      s->bind(4, run.dataset_path);
      s->bind(5, run.dataset_fingerprint);
      s->bind(6, kCodeVersion);
      s->bind(7, m.host);
      s->bind(8, run.device);
      s->bind(9, static_cast<std::int64_t>(getpid()));
      s->exec();
    }
    id = m.db->getLastInsertRowid();
    if (run.name.empty()) {
      StatementUse s(m.statement("UPDATE runs SET name = ?1 WHERE id = ?2"));
      s->bind(1, "run " + std::to_string(id));
      s->bind(2, id);
      s->exec();
    }
  });
  return id;
}

void RunStore::set_status(std::int64_t run, RunStatus status, const std::string& error) {
  std::lock_guard lock(impl_->mutex);
  impl_->set_status(run, status, error);
}

void RunStore::claim_run(std::int64_t run) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  bool claimed = false;
  m.write("claiming run " + std::to_string(run) + " for training", [&] {
    StatementUse s(m.statement(
        "UPDATE runs SET status = 'running', updated = ?1, host = ?2, pid = ?3, heartbeat = ?1"
        " WHERE id = ?4 AND status IN ('created', 'stopped', 'failed')"));
    s->bind(1, iso_now());
    s->bind(2, m.host);
    s->bind(3, static_cast<std::int64_t>(getpid()));
    s->bind(4, run);
    claimed = s->exec() == 1;
  });
  if (claimed) return;
  const std::optional<RunInfo> info = m.find_run(run);
  if (!info) m.no_run("claim run " + std::to_string(run), run);
  if (info->status == RunStatus::Completed) throw ConfigError("run " + std::to_string(run) + " is already completed");
  throw ConfigError("run " + std::to_string(run) + " is being trained by process " + std::to_string(info->pid) + " on host " + info->host +
                    " (" + to_string(info->status) + ")");
}

void RunStore::discard_after(std::int64_t run, std::int64_t step, double epoch) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("discarding what run " + std::to_string(run) + " recorded after step " + std::to_string(step), [&] {
    for (const char* sql : {"DELETE FROM scalars WHERE run = ?1 AND step > ?2", "DELETE FROM evaluations WHERE run = ?1 AND step > ?2",
                            "DELETE FROM run_log WHERE run = ?1 AND step > ?2"}) {
      StatementUse s(m.statement(sql));
      s->bind(1, run);
      s->bind(2, step);
      s->exec();
    }
    // Epochs are fractions of one step's size apart at the least; 1e-9 keeps the checkpoint's own epoch.
    for (const char* sql : {"DELETE FROM decile_tables WHERE run = ?1 AND epoch > ?2", "DELETE FROM tsne_snapshots WHERE run = ?1 AND epoch > ?2"}) {
      StatementUse s(m.statement(sql));
      s->bind(1, run);
      s->bind(2, epoch + 1e-9);
      s->exec();
    }
  });
}

void RunStore::mark_failed(std::int64_t run, const std::string& error) {
  std::lock_guard lock(impl_->mutex);
  impl_->set_status(run, RunStatus::Failed, error.empty() ? std::string("failed without an error message") : error);
}

void RunStore::heartbeat(std::int64_t run) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("recording a heartbeat of run " + std::to_string(run), [&] {
    StatementUse s(m.statement("UPDATE runs SET heartbeat = ?1 WHERE id = ?2"));
    s->bind(1, iso_now());
    s->bind(2, run);
    if (s->exec() == 0) m.no_run("record a heartbeat", run);
  });
}

void RunStore::rename_run(std::int64_t run, const std::string& name) {
  Impl& m = *impl_;
  if (name.empty())
    throw Error("run store " + m.path_text + ": cannot rename run " + std::to_string(run) + " to an empty name");
  std::lock_guard lock(m.mutex);
  m.write("renaming run " + std::to_string(run), [&] {
    StatementUse s(m.statement("UPDATE runs SET name = ?1, updated = ?2 WHERE id = ?3"));
    s->bind(1, name);
    s->bind(2, iso_now());
    s->bind(3, run);
    if (s->exec() == 0) m.no_run("rename run " + std::to_string(run), run);
  });
}

void RunStore::set_notes(std::int64_t run, const std::string& notes) {
  Impl& m = *impl_;
  constexpr std::size_t kMaxNotes = 64 * 1024;
  if (notes.size() > kMaxNotes)
    throw ConfigError("notes of run " + std::to_string(run) + ": " + std::to_string(notes.size()) + " bytes, at most " + std::to_string(kMaxNotes));
  if (const auto at = find_invalid_utf8(notes); at != std::string::npos)
    throw ConfigError("notes of run " + std::to_string(run) + ": not UTF-8 text (byte " +
                      std::to_string(static_cast<unsigned char>(notes[at])) + " at offset " + std::to_string(at) + ")");
  std::lock_guard lock(m.mutex);
  m.write("writing the notes of run " + std::to_string(run), [&] {
    StatementUse s(m.statement("UPDATE runs SET notes = ?1 WHERE id = ?2"));
    s->bind(1, notes);
    s->bind(2, run);
    if (s->exec() == 0) m.no_run("write notes of run " + std::to_string(run), run);
  });
}

void RunStore::add_tags(std::int64_t run, const std::vector<std::string>& tags) {
  Impl& m = *impl_;
  for (const auto& tag : tags) {
    const bool spaced = !tag.empty() && (std::isspace(static_cast<unsigned char>(tag.front())) || std::isspace(static_cast<unsigned char>(tag.back())));
    if (tag.empty() || tag.size() > 64 || spaced || tag.find_first_of("\n\r") != std::string::npos ||
        find_invalid_utf8(tag) != std::string::npos)
      throw ConfigError("tag '" + shown_text(tag) + "': a tag is 1 to 64 bytes of UTF-8 text without line breaks or spaces at its ends");
  }
  std::lock_guard lock(m.mutex);
  m.write("tagging run " + std::to_string(run), [&] {
    if (!m.run_exists(run)) m.no_run("tag run " + std::to_string(run), run);
    for (const auto& tag : tags) {
      StatementUse s(m.statement("INSERT OR IGNORE INTO run_tags (run, tag) VALUES (?1, ?2)"));
      s->bind(1, run);
      s->bind(2, tag);
      s->exec();
    }
  });
}

void RunStore::remove_tags(std::int64_t run, const std::vector<std::string>& tags) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("untagging run " + std::to_string(run), [&] {
    for (const auto& tag : tags) {
      StatementUse s(m.statement("DELETE FROM run_tags WHERE run = ?1 AND tag = ?2"));
      s->bind(1, run);
      s->bind(2, tag);
      s->exec();
    }
  });
}

void RunStore::delete_run(std::int64_t run) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("deleting run " + std::to_string(run), [&] {
    StatementUse s(m.statement("DELETE FROM runs WHERE id = ?1"));
    s->bind(1, run);
    if (s->exec() == 0) m.no_run("delete run " + std::to_string(run), run);
  });
}

std::optional<RunInfo> RunStore::find_run(std::int64_t run) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->find_run(run);
}

RunInfo RunStore::get_run(std::int64_t run) const {
  std::lock_guard lock(impl_->mutex);
  auto info = impl_->find_run(run);
  if (!info) impl_->no_run("read run " + std::to_string(run), run);
  return *std::move(info);
}

std::vector<RunInfo> RunStore::list_runs() const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("listing runs", [&] {
    std::vector<RunInfo> runs;
    StatementUse s(m.statement(std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id DESC"));
    while (s->executeStep()) runs.push_back(read_run(*s));
    return runs;
  });
}

std::vector<RunInfo> RunStore::runs_of_methods(const std::vector<std::string>& methods) const {
  if (methods.empty()) return {};
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("listing runs by method", [&] {
    std::string placeholders;
    for (std::size_t i = 0; i < methods.size(); ++i) placeholders += (i ? ", ?" : "?") + std::to_string(i + 1);
    std::vector<RunInfo> runs;
    StatementUse s(m.statement(std::string("SELECT ") + kRunColumns +
                               " FROM runs WHERE (CASE WHEN json_valid(config) THEN json_extract(config, '$.method') END) IN (" +
                               placeholders + ") ORDER BY id DESC"));
    for (std::size_t i = 0; i < methods.size(); ++i) s->bind(static_cast<int>(i + 1), methods[i]);
    while (s->executeStep()) runs.push_back(read_run(*s));
    return runs;
  });
}

void RunStore::add_scalars(std::int64_t run, const std::vector<ScalarPoint>& points) { write_scalars(run, points, false); }

void RunStore::replace_scalars(std::int64_t run, const std::vector<ScalarPoint>& points) { write_scalars(run, points, true); }

void RunStore::write_scalars(std::int64_t run, const std::vector<ScalarPoint>& points, bool replace) {
  Impl& m = *impl_;
  if (points.empty()) return;
  std::lock_guard lock(m.mutex);
  const std::string what = "adding " + std::to_string(points.size()) + " scalars to run " + std::to_string(run);
  m.write(what, [&] {
    m.require_run("add scalars", run);
    StatementUse s(m.statement(
        "INSERT INTO scalars (run, step, epoch, key, value, wall_time) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    for (std::size_t i = 0; i < points.size(); ++i) {
      const ScalarPoint& p = points[i];
      if (replace && !p.key.empty()) {
        StatementUse drop(m.statement("DELETE FROM scalars WHERE run = ?1 AND key = ?2 AND step = ?3"));
        drop->bind(1, run);
        drop->bind(2, p.key);
        drop->bind(3, p.step);
        drop->exec();
      }
      if (p.key.empty())
        throw Error("run store " + m.path_text + ": cannot add scalars to run " + std::to_string(run) + ": point " +
                    std::to_string(i) + " (step " + std::to_string(p.step) +
                    ") has an empty key; nothing of this batch was recorded");
      s->bind(1, run);
      s->bind(2, p.step);
      s->bind(3, p.epoch);
      s->bind(4, p.key);
      s->bind(5, p.value);
      s->bind(6, p.wall_time);
      s->exec();
      s->reset();
    }
  });
}

std::vector<ScalarPoint> RunStore::scalars(std::int64_t run, const std::string& key, std::int64_t after_step) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading scalars of run " + std::to_string(run), [&] {
    std::vector<ScalarPoint> points;
    StatementUse s(m.statement(
        key.empty() ? "SELECT step, epoch, key, value, wall_time FROM scalars"
                      " WHERE run = ?1 AND step > ?2 ORDER BY step, rowid"
                    : "SELECT step, epoch, key, value, wall_time FROM scalars"
                      " WHERE run = ?1 AND key = ?3 AND step > ?2 ORDER BY step, rowid"));
    s->bind(1, run);
    s->bind(2, after_step);
    if (!key.empty()) s->bind(3, key);
    while (s->executeStep()) {
      points.push_back(ScalarPoint{s->getColumn(0).getInt64(), s->getColumn(1).getDouble(),
                                   s->getColumn(2).getString(), real_or_nan(s->getColumn(3)),
                                   s->getColumn(4).getDouble()});
    }
    return points;
  });
}

std::vector<ScalarPoint> RunStore::scalars_with_prefix(std::int64_t run, const std::string& prefix) const {
  if (prefix.empty() || static_cast<unsigned char>(prefix.back()) == 0xFF)
    throw Error("run store " + impl_->path_text + ": scalars_with_prefix needs a prefix not ending in byte 0xFF");
  std::string end = prefix;  // the first string after every key that starts with prefix
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading scalars of run " + std::to_string(run), [&] {
    std::vector<ScalarPoint> points;
    StatementUse s(m.statement("SELECT step, epoch, key, value, wall_time FROM scalars"
                               " WHERE run = ?1 AND key >= ?2 AND key < ?3 ORDER BY step, rowid"));
    s->bind(1, run);
    s->bind(2, prefix);
    s->bind(3, end);
    while (s->executeStep()) {
      points.push_back(ScalarPoint{s->getColumn(0).getInt64(), s->getColumn(1).getDouble(),
                                   s->getColumn(2).getString(), real_or_nan(s->getColumn(3)),
                                   s->getColumn(4).getDouble()});
    }
    return points;
  });
}

std::vector<std::string> RunStore::scalar_keys(std::int64_t run) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading scalar keys of run " + std::to_string(run), [&] {
    std::vector<std::string> keys;
    StatementUse s(m.statement("SELECT DISTINCT key FROM scalars WHERE run = ?1 ORDER BY key"));
    s->bind(1, run);
    while (s->executeStep()) keys.push_back(s->getColumn(0).getString());
    return keys;
  });
}

void RunStore::add_evaluation(std::int64_t run, double epoch, std::int64_t step,
                              const std::vector<std::pair<std::string, double>>& metrics) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("adding an evaluation to run " + std::to_string(run), [&] {
    m.require_run("add an evaluation", run);
    StatementUse s(
        m.statement("INSERT INTO evaluations (run, epoch, step, metric, value) VALUES (?1, ?2, ?3, ?4, ?5)"));
    for (const auto& [metric, value] : metrics) {
      if (metric.empty())
        throw Error("run store " + m.path_text + ": cannot add an evaluation to run " + std::to_string(run) +
                    " at step " + std::to_string(step) + ": a metric has an empty name");
      s->bind(1, run);
      s->bind(2, epoch);
      s->bind(3, step);
      s->bind(4, metric);
      s->bind(5, value);
      s->exec();
      s->reset();
    }
  });
}

std::vector<EvalPoint> RunStore::evaluations(std::int64_t run) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading evaluations of run " + std::to_string(run), [&] {
    std::vector<EvalPoint> points;
    StatementUse s(m.statement("SELECT epoch, step, metric, value FROM evaluations WHERE run = ?1 ORDER BY step, id"));
    s->bind(1, run);
    while (s->executeStep()) {
      points.push_back(EvalPoint{s->getColumn(0).getDouble(), s->getColumn(1).getInt64(), s->getColumn(2).getString(),
                                 real_or_nan(s->getColumn(3))});
    }
    return points;
  });
}

void RunStore::add_decile_table(std::int64_t run, double epoch, const std::string& metric,
                                const std::vector<double>& bins) {
  Impl& m = *impl_;
  if (metric.empty() || bins.size() != 10)
    throw Error("run store " + m.path_text + ": cannot add decile table '" + metric + "' to run " +
                std::to_string(run) + ": " +
                (metric.empty() ? std::string("the metric has no name")
                                : "it has " + std::to_string(bins.size()) + " bins; a decile table has 10"));
  std::lock_guard lock(m.mutex);
  m.write("adding decile table '" + metric + "' to run " + std::to_string(run), [&] {
    m.require_run("add a decile table", run);
    StatementUse s(m.statement(
        "INSERT INTO decile_tables (run, epoch, metric, bin, value) VALUES (?1, ?2, ?3, ?4, ?5)"
        " ON CONFLICT (run, metric, epoch, bin) DO UPDATE SET value = excluded.value"));
    for (std::size_t b = 0; b < bins.size(); ++b) {
      s->bind(1, run);
      s->bind(2, epoch);
      s->bind(3, metric);
      s->bind(4, static_cast<std::int64_t>(b + 1));
      s->bind(5, bins[b]);
      s->exec();
      s->reset();
    }
  });
}

std::vector<double> RunStore::latest_decile_table(std::int64_t run, const std::string& metric) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading decile table '" + metric + "' of run " + std::to_string(run), [&] {
    std::vector<double> bins;
    StatementUse s(m.statement(
        "SELECT value FROM decile_tables WHERE run = ?1 AND metric = ?2 AND epoch ="
        " (SELECT max(epoch) FROM decile_tables WHERE run = ?1 AND metric = ?2) ORDER BY bin"));
    s->bind(1, run);
    s->bind(2, metric);
    while (s->executeStep()) bins.push_back(real_or_nan(s->getColumn(0)));
    return bins;
  });
}

std::vector<DecileTable> RunStore::decile_tables(std::int64_t run, const std::string& metric) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading decile tables of run " + std::to_string(run), [&] {
    std::vector<DecileTable> tables;
    StatementUse s(m.statement(
        "SELECT epoch, metric, value FROM decile_tables WHERE run = ?1 AND (?2 = '' OR metric = ?2)"
        " ORDER BY epoch, metric, bin"));
    s->bind(1, run);
    s->bind(2, metric);
    while (s->executeStep()) {
      const double epoch = s->getColumn(0).getDouble();
      std::string name = s->getColumn(1).getString();
      if (tables.empty() || tables.back().epoch != epoch || tables.back().metric != name)
        tables.push_back(DecileTable{epoch, std::move(name), {}});
      tables.back().bins.push_back(real_or_nan(s->getColumn(2)));
    }
    return tables;
  });
}

void RunStore::add_artifact(std::int64_t run, const std::string& kind, const std::string& path) {
  Impl& m = *impl_;
  if (kind.empty() || path.empty())
    throw Error("run store " + m.path_text + ": cannot add an artifact to run " + std::to_string(run) +
                ": its " + (kind.empty() ? "kind" : "path") + " is empty");
  std::lock_guard lock(m.mutex);
  m.write("adding " + kind + " artifact " + path + " to run " + std::to_string(run), [&] {
    m.require_run("add an artifact", run);
    StatementUse s(m.statement("INSERT INTO artifacts (run, kind, path, created) VALUES (?1, ?2, ?3, ?4)"));
    s->bind(1, run);
    s->bind(2, kind);
    s->bind(3, path);
    s->bind(4, iso_now());
    s->exec();
  });
}

std::vector<Artifact> RunStore::artifacts(std::int64_t run) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading artifacts of run " + std::to_string(run), [&] {
    std::vector<Artifact> out;
    StatementUse s(m.statement("SELECT kind, path, created FROM artifacts WHERE run = ?1 ORDER BY id"));
    s->bind(1, run);
    while (s->executeStep())
      out.push_back(Artifact{s->getColumn(0).getString(), s->getColumn(1).getString(), s->getColumn(2).getString()});
    return out;
  });
}

std::optional<std::string> RunStore::latest_artifact(std::int64_t run, const std::string& kind) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading artifacts of run " + std::to_string(run), [&]() -> std::optional<std::string> {
    StatementUse s(
        m.statement("SELECT path FROM artifacts WHERE run = ?1 AND kind = ?2 ORDER BY id DESC LIMIT 1"));
    s->bind(1, run);
    s->bind(2, kind);
    if (!s->executeStep()) return std::nullopt;
    return s->getColumn(0).getString();
  });
}

void RunStore::add_tsne_snapshot(std::int64_t run, double epoch, std::int64_t query, const std::string& payload_json) {
  Impl& m = *impl_;
  if (!nlohmann::json::accept(payload_json))
    throw Error("run store " + m.path_text + ": the t-SNE snapshot of run " + std::to_string(run) + " at epoch " +
                std::to_string(epoch) + " is not valid JSON");
  std::lock_guard lock(m.mutex);
  m.write("adding a t-SNE snapshot to run " + std::to_string(run), [&] {
    m.require_run("add a t-SNE snapshot", run);
    StatementUse s(m.statement(
        "INSERT INTO tsne_snapshots (run, epoch, query_id, payload, created) VALUES (?1, ?2, ?3, ?4, ?5)"));
    s->bind(1, run);
    s->bind(2, epoch);
    s->bind(3, query);
    s->bind(4, payload_json);
    s->bind(5, iso_now());
    s->exec();
  });
}

std::optional<TsneSnapshot> RunStore::latest_tsne_snapshot(std::int64_t run) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading t-SNE snapshots of run " + std::to_string(run), [&]() -> std::optional<TsneSnapshot> {
    StatementUse s(m.statement(
        "SELECT epoch, query_id, payload FROM tsne_snapshots WHERE run = ?1 ORDER BY epoch DESC, id DESC LIMIT 1"));
    s->bind(1, run);
    if (!s->executeStep()) return std::nullopt;
    return TsneSnapshot{s->getColumn(0).getDouble(), s->getColumn(1).getInt64(), s->getColumn(2).getString()};
  });
}

std::int64_t RunStore::create_sweep(const std::string& name, const std::string& config_json, const std::string& grid_json,
                                   const std::vector<std::vector<std::string>>& points) {
  Impl& m = *impl_;
  if (!nlohmann::json::accept(config_json) || !nlohmann::json::accept(grid_json))
    throw Error("run store " + m.path_text + ": the config and grid of sweep '" + name + "' must be JSON");
  std::lock_guard lock(m.mutex);
  std::int64_t id = 0;
  m.write("creating sweep '" + name + "'", [&] {
    {
      StatementUse s(m.statement("INSERT INTO sweeps (name, created, config, grid) VALUES (?1, ?2, ?3, ?4)"));
      s->bind(1, name);
      s->bind(2, iso_now());
      s->bind(3, config_json);
      s->bind(4, grid_json);
      s->exec();
    }
    id = m.db->getLastInsertRowid();
    for (std::size_t p = 0; p < points.size(); ++p) {
      StatementUse s(m.statement("INSERT INTO sweep_points (sweep, position, assignments) VALUES (?1, ?2, ?3)"));
      s->bind(1, id);
      s->bind(2, static_cast<std::int64_t>(p));
      s->bind(3, nlohmann::json(points[p]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      s->exec();
    }
  });
  return id;
}

void RunStore::set_sweep_point_run(std::int64_t sweep, std::int64_t position, std::int64_t run) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("recording the run of sweep " + std::to_string(sweep) + " point " + std::to_string(position), [&] {
    StatementUse s(m.statement("UPDATE sweep_points SET run = ?1 WHERE sweep = ?2 AND position = ?3"));
    s->bind(1, run);
    s->bind(2, sweep);
    s->bind(3, position);
    if (s->exec() == 0)
      throw Error("run store " + m.path_text + ": sweep " + std::to_string(sweep) + " has no point " + std::to_string(position));
  });
}

std::optional<SweepInfo> RunStore::find_sweep(std::int64_t sweep) const {
  for (auto& info : list_sweeps())
    if (info.id == sweep) return std::move(info);
  return std::nullopt;
}

std::vector<SweepInfo> RunStore::list_sweeps() const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading the sweeps", [&] {
    std::vector<SweepInfo> out;
    {
      StatementUse s(m.statement("SELECT id, name, created, config, grid FROM sweeps ORDER BY id DESC"));
      while (s->executeStep())
        out.push_back({s->getColumn(0).getInt64(), s->getColumn(1).getString(), s->getColumn(2).getString(),
                       s->getColumn(3).getString(), s->getColumn(4).getString(), {}});
    }
    for (SweepInfo& info : out) {
      StatementUse s(m.statement("SELECT position, assignments, run FROM sweep_points WHERE sweep = ?1 ORDER BY position"));
      s->bind(1, info.id);
      while (s->executeStep()) {
        SweepPoint p;
        p.position = s->getColumn(0).getInt64();
        const auto assignments = nlohmann::json::parse(s->getColumn(1).getString(), nullptr, false);
        if (assignments.is_array())
          for (const auto& a : assignments)
            if (a.is_string()) p.assignments.push_back(a.get<std::string>());
        p.run = s->getColumn(2).isNull() ? 0 : s->getColumn(2).getInt64();
        info.points.push_back(std::move(p));
      }
    }
    return out;
  });
}

std::int64_t RunStore::add_added_label(std::int64_t run, const std::string& text, const std::string& synthesized_by) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  std::int64_t id = 0;
  m.write("adding a label to run " + std::to_string(run), [&] {
    m.require_run("add a label to run " + std::to_string(run), run);
    StatementUse existing(m.statement("SELECT id FROM added_labels WHERE run = ?1 AND text = ?2"));
    existing->bind(1, run);
    existing->bind(2, text);
    if (existing->executeStep())
      throw ConfigError("run " + std::to_string(run) + " already has the added label \"" + text + "\" (added label " +
                        std::to_string(existing->getColumn(0).getInt64()) + ")");
    StatementUse s(m.statement("INSERT INTO added_labels (run, text, synthesized_by, created) VALUES (?1, ?2, ?3, ?4)"));
    s->bind(1, run);
    s->bind(2, text);
    s->bind(3, synthesized_by);
    s->bind(4, iso_now());
    s->exec();
    id = m.db->getLastInsertRowid();
  });
  return id;
}

std::vector<AddedLabel> RunStore::added_labels(std::int64_t run) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading the added labels of run " + std::to_string(run), [&] {
    std::vector<AddedLabel> out;
    StatementUse s(m.statement("SELECT id, text, synthesized_by, created FROM added_labels WHERE run = ?1 ORDER BY id"));
    s->bind(1, run);
    while (s->executeStep())
      out.push_back({s->getColumn(0).getInt64(), s->getColumn(1).getString(), s->getColumn(2).getString(), s->getColumn(3).getString()});
    return out;
  });
}

void RunStore::add_log_line(std::int64_t run, std::int64_t step, const std::string& message) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  m.write("logging to run " + std::to_string(run), [&] {
    StatementUse s(m.statement("INSERT INTO run_log (run, wall_time, step, message) VALUES (?1, ?2, ?3, ?4)"));
    s->bind(1, run);
    s->bind(2, now_seconds());
    s->bind(3, step);
    s->bind(4, message);
    s->exec();
  });
}

std::vector<LogLine> RunStore::log(std::int64_t run) const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading the log of run " + std::to_string(run), [&] {
    std::vector<LogLine> out;
    StatementUse s(m.statement("SELECT wall_time, step, message FROM run_log WHERE run = ?1 ORDER BY id"));
    s->bind(1, run);
    while (s->executeStep()) out.push_back({s->getColumn(0).getDouble(), s->getColumn(1).getInt64(), s->getColumn(2).getString()});
    return out;
  });
}

void RunStore::remove_added_label(std::int64_t run, std::int64_t id) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  bool removed = false;
  m.write("removing added label " + std::to_string(id) + " of run " + std::to_string(run), [&] {
    StatementUse s(m.statement("DELETE FROM added_labels WHERE run = ?1 AND id = ?2"));
    s->bind(1, run);
    s->bind(2, id);
    removed = s->exec() == 1;
  });
  if (!removed) throw ConfigError("run " + std::to_string(run) + " has no added label " + std::to_string(id) + " (xmc labels list shows them)");
}

std::string RunStore::store_id() const {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  return m.read("reading the store's identity", [&] {
    StatementUse s(m.statement("SELECT value FROM store_meta WHERE key = 'store_id'"));
    if (!s->executeStep()) throw Error("run store " + m.path_text + " has no identity (store_meta.store_id): it is damaged");
    return s->getColumn(0).getString();
  });
}

int RunStore::reap_orphaned_runs() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  std::vector<std::pair<std::int64_t, std::int64_t>> owned;  // (run, pid) running on this host
  m.read("looking for orphaned runs", [&] {
    StatementUse s(m.statement("SELECT id, pid FROM runs WHERE status IN ('running', 'paused') AND host = ?1"));
    s->bind(1, m.host);
    while (s->executeStep()) owned.emplace_back(s->getColumn(0).getInt64(), s->getColumn(1).getInt64());
  });
  const std::int64_t self = getpid();
  int reaped = 0;
  for (const auto& owner : owned) {
    const std::int64_t run = owner.first, pid = owner.second;  // (clang 14 cannot capture structured bindings)
    // pid <= 0 would address process groups; such a row cannot name a live owner either way.
    if (pid == self || pid > std::numeric_limits<pid_t>::max()) continue;
    if (pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;
    m.write("marking orphaned run " + std::to_string(run) + " failed", [&] {
      StatementUse s(m.statement(
          "UPDATE runs SET status = 'failed', last_error = ?1, updated = ?2"
          " WHERE id = ?3 AND status IN ('running', 'paused') AND host = ?4 AND pid = ?5"));
      s->bind(1, "process " + std::to_string(pid) + " ended without finishing the run (crashed or killed)");
      s->bind(2, iso_now());
      s->bind(3, run);
      s->bind(4, m.host);
      s->bind(5, pid);
      reaped += s->exec();  // 0 when another process changed the run meanwhile
    });
  }
  return reaped;
}

}  // namespace xmc
