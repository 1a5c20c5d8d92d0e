#include "engine/store/store_schema.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <array>
#include <regex>
#include <set>

#include "engine/core/error.h"

namespace xmc::store {
namespace {

// Version 1: the initial schema. Scalar and evaluation values are nullable: SQLite stores NaN as
// NULL, and the store reads NULL back as NaN so a diverged loss stays visible.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE runs (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  name                TEXT NOT NULL,
  created             TEXT NOT NULL,
  updated             TEXT NOT NULL,
  status              TEXT NOT NULL DEFAULT 'created'
                      CHECK (status IN ('created','running','paused','completed','failed','stopped')),
  config              TEXT NOT NULL DEFAULT '{}',
  dataset_path        TEXT NOT NULL DEFAULT '',
  dataset_fingerprint TEXT NOT NULL DEFAULT '',
  code_version        TEXT NOT NULL DEFAULT '',
  host                TEXT NOT NULL DEFAULT '',
  device              TEXT NOT NULL DEFAULT '',
  pid                 INTEGER NOT NULL DEFAULT 0,
  last_error          TEXT NOT NULL DEFAULT '',
  heartbeat           TEXT
);
CREATE INDEX runs_status ON runs(status);

CREATE TABLE scalars (
  run       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step      INTEGER NOT NULL,
  epoch     REAL NOT NULL,
  key       TEXT NOT NULL,
  value     REAL,
  wall_time REAL NOT NULL
);
CREATE INDEX scalars_run_key_step ON scalars(run, key, step);

CREATE TABLE evaluations (
  id     INTEGER PRIMARY KEY,
  run    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch  REAL NOT NULL,
  step   INTEGER NOT NULL,
  metric TEXT NOT NULL,
  value  REAL
);
CREATE INDEX evaluations_run_step ON evaluations(run, step);

CREATE TABLE decile_tables (
  run    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch  REAL NOT NULL,
  metric TEXT NOT NULL,
  bin    INTEGER NOT NULL CHECK (bin BETWEEN 1 AND 10),
  value  REAL,
  PRIMARY KEY (run, metric, epoch, bin)
);

CREATE TABLE artifacts (
  id      INTEGER PRIMARY KEY,
  run     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  kind    TEXT NOT NULL,
  path    TEXT NOT NULL,
  created TEXT NOT NULL
);
CREATE INDEX artifacts_run_kind ON artifacts(run, kind);

CREATE TABLE tsne_snapshots (
  id       INTEGER PRIMARY KEY,
  run      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch    REAL NOT NULL,
  query_id INTEGER NOT NULL,
  payload  TEXT NOT NULL,
  created  TEXT NOT NULL
);
CREATE INDEX tsne_snapshots_run_epoch ON tsne_snapshots(run, epoch);

PRAGMA application_id = 1481458514;
)sql";

// Version 2: the store's identity, a random id drawn once. Run folders and checkpoints carry it with the
// run id, so that a store recreated in the same place (ids start again at 1) never takes up the files
// of the old store's runs.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE store_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));
)sql";

// Version 3: labels added to a trained run by their text (xmc labels add, the workbench's search panel),
// kept so that every later use of the run ranks them too.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE added_labels (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  run            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  text           TEXT NOT NULL,
  synthesized_by TEXT NOT NULL,
  created        TEXT NOT NULL,
  UNIQUE (run, text)
);
)sql";

// Version 4: a researcher's notes on a run and its tags, for finding and grouping runs later; sweeps (a
// base config and a grid of values, each grid point trained as a normal run, kept so a sweep can resume).
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE runs ADD COLUMN notes TEXT NOT NULL DEFAULT '';
CREATE TABLE run_tags (
  run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (run, tag)
);
CREATE INDEX run_tags_tag ON run_tags(tag);
CREATE TABLE sweeps (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL,
  created TEXT NOT NULL,
  config  TEXT NOT NULL,
  grid    TEXT NOT NULL
);
CREATE TABLE sweep_points (
  sweep       INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  position    INTEGER NOT NULL,
  assignments TEXT NOT NULL,
  run         INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  PRIMARY KEY (sweep, position)
);
)sql";

// Version 5: a run's log — the phases it went through and what it decided on the way (the concat weight chosen
// on held-out queries, the IRENE generator kept), in order, with the optimiser step each came at.
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE run_log (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  run       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  wall_time REAL NOT NULL,
  step      INTEGER NOT NULL,
  message   TEXT NOT NULL
);
CREATE INDEX run_log_run ON run_log(run, id);
)sql";

// Version 6: where an imported run came from (xmc runs import): its first store's identity and its id there, so
// that importing it again, from any store it travelled through, adds nothing.
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE run_origins (
  run        INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  store_id   TEXT NOT NULL,
  origin_run INTEGER NOT NULL,
  UNIQUE (store_id, origin_run)
);
)sql";
constexpr std::array<Migration, 6> kMigrations{{
    {1, "create runs, scalars, evaluations, decile tables, artifacts and t-SNE snapshots", kSchemaV1},
    {2, "give the store a random identity", kSchemaV2},
    {3, "keep the labels added to trained runs", kSchemaV3},
    {4, "keep notes and tags of runs, and sweeps", kSchemaV4},
    {5, "keep each run's log of phases and decisions", kSchemaV5},
    {6, "keep where imported runs came from", kSchemaV6},
}};
static_assert(kMigrations.back().version == kSchemaVersion, "kSchemaVersion must match the last migration");
static_assert(kApplicationId == 1481458514, "the application_id in kSchemaV1 must match kApplicationId");

}  // namespace

std::span<const Migration> run_store_migrations() { return kMigrations; }

int schema_version(SQLite::Database& db) { return db.execAndGet("PRAGMA user_version").getInt(); }

void check_intact(SQLite::Database& db, const std::string& db_path, int version, std::span<const Migration> steps, bool quick_check) {
  std::set<std::string> present;
  std::string problem;
  try {
    SQLite::Statement tables(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    while (tables.executeStep()) present.insert(tables.getColumn(0).getString());
    SQLite::Statement check(db, "PRAGMA quick_check(5)");
    while (quick_check && check.executeStep()) {
      const std::string line = check.getColumn(0).getString();
      if (line != "ok") problem += (problem.empty() ? "" : "; ") + line;
    }
  } catch (const SQLite::Exception& e) {
    throw InputError(db_path, std::string("is a damaged run store (") + e.what() + "); it was left unchanged: restore it from a copy");
  }
  std::string missing;
  static const std::regex create_table(R"(CREATE TABLE (\w+))");
  for (const Migration& step : steps) {
    if (step.version > version) break;
    const std::string sql = step.sql;
    for (std::sregex_iterator it(sql.begin(), sql.end(), create_table), end; it != end; ++it)
      if (!present.count((*it)[1].str())) missing += (missing.empty() ? "" : ", ") + (*it)[1].str();
  }
  if (!missing.empty())
    throw InputError(db_path, "is a damaged run store: the table(s) " + missing + " of schema version " + std::to_string(version) +
                                  " are missing; it was left unchanged: restore it from a copy");
  if (!problem.empty())
    throw InputError(db_path, "is a damaged run store (SQLite's quick_check: " + problem + "); it was left unchanged: restore it from a copy");
}

int migrate(SQLite::Database& db, const std::string& db_path, std::span<const Migration> steps) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].version != static_cast<int>(i) + 1)
      throw Error("run store schema: migration step " + std::to_string(i + 1) + " is numbered " +
                  std::to_string(steps[i].version) + " (steps must be numbered 1, 2, 3, ...)");
  }
  const int target = static_cast<int>(steps.size());
  int version = 0;
  try {
    version = schema_version(db);
  } catch (const SQLite::Exception& e) {
    throw InputError(db_path, std::string("cannot read the run store's schema version: ") + e.what());
  }
  if (version > target)
    throw InputError(db_path, "run store schema version " + std::to_string(version) +
                                  " is newer than this program understands (version " + std::to_string(target) +
                                  "); open it with a newer XMC Workbench (the file was left unchanged)");

  for (const Migration& step : steps) {
    if (step.version <= version) continue;
    try {
      SQLite::Transaction txn(db, SQLite::TransactionBehavior::IMMEDIATE);
      version = schema_version(db);  // another process may have migrated while we waited for the lock
      if (version > target)
        throw InputError(db_path, "run store schema version " + std::to_string(version) +
                                      " is newer than this program understands (version " +
                                      std::to_string(target) + ")");
      if (step.version <= version) continue;  // rolls back the empty transaction
      db.exec(step.sql);
      db.exec("PRAGMA user_version = " + std::to_string(step.version));
      txn.commit();
      version = step.version;
    } catch (const SQLite::Exception& e) {
      throw InputError(db_path, "upgrading the run store schema from version " + std::to_string(step.version - 1) +
                                    " to " + std::to_string(step.version) + " (" + step.description +
                                    ") failed: " + e.what() + "; the database stays at version " +
                                    std::to_string(step.version - 1));
    }
  }
  return version;
}

}  // namespace xmc::store
