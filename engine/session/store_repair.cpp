#include "engine/session/store_repair.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "engine/core/error.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/store/sqlite_text.h"

namespace xmc {
namespace {

std::vector<std::string> columns_of(SQLite::Database& db, const std::string& schema, const std::string& table) {
  std::vector<std::string> out;
  SQLite::Statement info(db, "PRAGMA " + schema + ".table_info(" + quoted_identifier(table) + ")");
  while (info.executeStep()) out.push_back(info.getColumn(1).getString());
  return out;
}

std::set<std::string> tables_of(SQLite::Database& db, const std::string& schema) {
  std::set<std::string> out;
  SQLite::Statement tables(db, "SELECT name FROM " + schema + ".sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  while (tables.executeStep()) out.insert(tables.getColumn(0).getString());
  return out;
}

/// Copies rows with rowid in [low, high]; a range that cannot be read is split in halves down to single rows,
/// and single unreadable rows are counted as lost. `failures_left` bounds the search where a table's root is
/// gone and every range fails.
void copy_range(SQLite::Database& db, const std::string& insert, std::int64_t low, std::int64_t high, RepairedTable& table,
                std::int64_t& failures_left) {
  if (failures_left <= 0) return;
  try {
    SQLite::Statement statement(db, insert);
    statement.bind(1, static_cast<std::int64_t>(low));
    statement.bind(2, static_cast<std::int64_t>(high));
    table.copied += statement.exec();
  } catch (const SQLite::Exception&) {
    --failures_left;
    if (low == high) {
      ++table.lost;
      return;
    }
    const std::int64_t middle = low + (high - low) / 2;
    copy_range(db, insert, low, middle, table, failures_left);
    copy_range(db, insert, middle + 1, high, table, failures_left);
  }
}

void link_or_copy_tree(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code error;
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive | std::filesystem::copy_options::create_hard_links, error);
  if (error) std::filesystem::copy(from, to, std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
}

}  // namespace

RepairReport repair_run_store(const std::filesystem::path& damaged, const std::filesystem::path& out) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(damaged, error)) throw InputError(damaged.string(), "no such run store (a regular file) to repair");
  if (std::filesystem::exists(out, error) || std::filesystem::exists(run_directory(out, 1).parent_path(), error))
    throw ConfigError("--out: " + out.string() + " exists; the repaired copy goes to a new file");
  { RunStore fresh(out); }  // the current schema, empty

  RepairReport report;
  SQLite::Database db(out.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_URI);
  std::set<std::string> old_tables;
  // Read-only; a store whose write-ahead log cannot be opened read-only is read as it is on disk (immutable).
  for (const char* parameters : {"mode=ro", "immutable=1"}) {
    try {
      db.exec("ATTACH DATABASE '" + sqlite_uri(damaged, parameters) + "' AS old");
    } catch (const SQLite::Exception&) {
      continue;
    }
    try {
      old_tables = tables_of(db, "old");
      break;
    } catch (const SQLite::Exception& e) {
      db.exec("DETACH DATABASE old");
      if (std::string(parameters) == "immutable=1")
        throw InputError(damaged.string(), std::string("nothing of it can be read as a run store: ") + e.what());
    }
  }
  if (old_tables.empty()) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(out.string() + suffix, error);
    throw InputError(damaged.string(), "has no tables left to copy (not a run store, or its schema is destroyed)");
  }

  std::vector<std::string> order{"runs", "store_meta"};  // runs first: the other tables refer to them
  for (const std::string& name : tables_of(db, "main"))
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  // No enclosing transaction: SQLite may roll one back by itself on reading a corrupt page, taking the rows
  // copied so far with it. Each range is its own statement.
  for (const std::string& name : order) {
    RepairedTable table{.name = name};
    if (!old_tables.count(name)) {
      table.missing = true;
      report.tables.push_back(table);
      continue;
    }
    const std::vector<std::string> mine = columns_of(db, "main", name), theirs = columns_of(db, "old", name);
    std::string columns;
    for (const std::string& column : mine)
      if (std::find(theirs.begin(), theirs.end(), column) != theirs.end()) columns += (columns.empty() ? "" : ", ") + quoted_identifier(column);
    // The store's identity replaces the fresh one: run folders and checkpoints carry it.
    const std::string insert = std::string(name == "store_meta" ? "INSERT OR REPLACE" : "INSERT OR IGNORE") + " INTO main." + quoted_identifier(name) +
                               " (" + columns + ") SELECT " + columns + " FROM old." + quoted_identifier(name) + " WHERE rowid BETWEEN ? AND ?";
    // The table's rowids, or where its extent cannot be read, every rowid a store of this size could hold.
    std::int64_t low = 1, high = std::int64_t{1} << 31, failures_left = 100000;
    try {
      SQLite::Statement bounds(db, "SELECT min(rowid), max(rowid) FROM old." + quoted_identifier(name));
      if (!bounds.executeStep() || bounds.getColumn(0).isNull()) high = 0;
      else low = bounds.getColumn(0).getInt64(), high = bounds.getColumn(1).getInt64();
    } catch (const SQLite::Exception&) {
    }
    if (low <= high) copy_range(db, insert, low, high, table, failures_left);
    if (failures_left <= 0) table.lost = -1;  // its root is gone: what was copied is all that could be found
    report.tables.push_back(table);
  }

  // Runs whose `runs` row is gone but whose rows elsewhere survived: a row of their own again.
  std::string referenced;
  for (const std::string& name : order) {
    if (name == "runs") continue;
    const std::vector<std::string> columns = columns_of(db, "main", name);
    if (std::find(columns.begin(), columns.end(), "run") != columns.end())
      referenced += (referenced.empty() ? "" : " UNION ") + std::string("SELECT run FROM main.") + quoted_identifier(name);
  }
  if (!referenced.empty()) {
    SQLite::Statement orphans(db, "SELECT DISTINCT run FROM (" + referenced + ") WHERE run NOT IN (SELECT id FROM main.runs) ORDER BY run");
    while (orphans.executeStep()) report.recovered_runs.push_back(orphans.getColumn(0).getInt64());
    for (const std::int64_t run : report.recovered_runs) {
      SQLite::Statement insert(db, "INSERT INTO main.runs (id, name, created, updated, status, last_error) VALUES "
                                   "(?, ?, datetime('now'), datetime('now'), 'failed', "
                                   "'recovered by xmc runs repair: its row in the damaged store could not be read')");
      insert.bind(1, static_cast<std::int64_t>(run));
      insert.bind(2, "recovered run " + std::to_string(run));
      insert.exec();
    }
  }
  try {
    db.exec("DETACH DATABASE old");
  } catch (const SQLite::Exception&) {
    // the connection closes it
  }

  const std::filesystem::path old_folders = run_directory(damaged, 1).parent_path(), new_folders = run_directory(out, 1).parent_path();
  if (std::filesystem::is_directory(old_folders, error)) {
    std::filesystem::create_directories(new_folders);
    for (const auto& entry : std::filesystem::directory_iterator(old_folders)) {
      link_or_copy_tree(entry.path(), new_folders / entry.path().filename());
      ++report.run_folders;
    }
  }
  return report;
}

}  // namespace xmc
