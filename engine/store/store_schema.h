#pragma once
// The run store's versioned SQLite schema. The version lives in `PRAGMA user_version`; each Migration
// takes the database from `version - 1` to `version` inside its own transaction, so an interrupted
// upgrade leaves the database at the last complete version. To change the schema, append a step to
// the list in store_schema.cpp and bump kSchemaVersion; never edit a step that has shipped.
#include <span>
#include <string>

namespace SQLite {
class Database;
}  // namespace SQLite

namespace xmc::store {

/// Schema version this code writes; opening a database with a higher user_version is an error.
inline constexpr int kSchemaVersion = 6;

/// `PRAGMA application_id` of a run store ("XMCR"), to refuse other programs' SQLite files.
inline constexpr int kApplicationId = 0x584D4352;

/// One schema step: `sql` (one or more statements) upgrades version `version - 1` to `version`.
struct Migration {
  int version;              ///< user_version after this step; steps are numbered 1, 2, 3, ...
  const char* description;  ///< one line for error messages, e.g. "create runs and scalars"
  const char* sql;          ///< statements run with sqlite3_exec inside the step's transaction
};

/// Every step of the run-store schema, in order; the last step's version is kSchemaVersion.
std::span<const Migration> run_store_migrations();

/// Reads `PRAGMA user_version` (0 for a new, empty database).
int schema_version(SQLite::Database& db);

/// Checks a store at schema `version` before anything is written to it: every table its migrations created must
/// be there, and (with `quick_check`) SQLite's quick_check must pass. Throws InputError naming the store and what
/// is wrong (the file is left as it is: a damaged store is never repaired in place).
void check_intact(SQLite::Database& db, const std::string& db_path, int version, std::span<const Migration> steps, bool quick_check = true);

/// Applies the steps of `steps` newer than the database's version, each in a BEGIN IMMEDIATE
/// transaction that re-reads the version first (so two processes opening a new store at once migrate
/// it once). Returns the version reached. Throws xmc::InputError naming `db_path` when the database
/// is newer than the last step (nothing is changed) or when a step fails (that step is rolled back,
/// earlier steps stay committed). `steps` must be numbered consecutively from 1.
int migrate(SQLite::Database& db, const std::string& db_path, std::span<const Migration> steps);

}  // namespace xmc::store
