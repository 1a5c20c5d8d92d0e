#include "engine/session/run_import.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "engine/store/run_store.h"
#include "engine/store/sqlite_text.h"

namespace xmc {
namespace {

/// The tables that hold a run's records besides its `runs` row, each row naming the run in its column `run`.
constexpr const char* kRunTables[] = {"scalars", "evaluations", "decile_tables", "artifacts", "tsne_snapshots", "added_labels", "run_tags", "run_log"};

/// The columns `table` has in both stores, but for `left_out` (its own row id, the run it belongs to).
std::string shared_columns(SQLite::Database& db, const std::string& table, const std::vector<std::string>& left_out) {
  auto columns_of = [&](const std::string& schema) {
    std::vector<std::string> out;
    SQLite::Statement info(db, "PRAGMA " + schema + ".table_info(" + quoted_identifier(table) + ")");
    while (info.executeStep()) out.push_back(info.getColumn(1).getString());
    return out;
  };
  const std::vector<std::string> theirs = columns_of("source");
  std::string columns;
  for (const std::string& column : columns_of("main"))
    if (std::find(left_out.begin(), left_out.end(), column) == left_out.end() && std::find(theirs.begin(), theirs.end(), column) != theirs.end())
      columns += (columns.empty() ? "" : ", ") + quoted_identifier(column);
  return columns;
}

struct Origin {
  std::string store_id;
  std::int64_t run = 0;
};

}  // namespace

ImportedRuns import_runs(const std::filesystem::path& target, const std::filesystem::path& source, const std::vector<std::int64_t>& runs) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(source, error)) throw InputError(source.string(), "no such run store (a regular file) to import from");
  if (std::filesystem::exists(target, error) && std::filesystem::equivalent(source, target, error))
    throw ConfigError(source.string() + " is the store the runs would go into");
  std::string source_id;
  std::vector<std::int64_t> chosen = runs;
  {
    // Opening it checks it as every use of a store does: a damaged or foreign file is refused by name here.
    const RunStore checked(source);
    source_id = checked.store_id();
    if (chosen.empty())
      for (const RunInfo& info : checked.list_runs()) chosen.push_back(info.id);
    for (const std::int64_t id : chosen)
      if (!checked.find_run(id)) throw ConfigError("--runs: " + source.string() + " has no run " + std::to_string(id));
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  std::string target_id;
  { target_id = RunStore(target).store_id(); }  // created, or brought to this version, as any use of it would

  SQLite::Database db(target.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_URI);
  db.setBusyTimeout(10000);
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("ATTACH DATABASE '" + sqlite_uri(source, "mode=ro") + "' AS source");
  const std::string run_columns = shared_columns(db, "runs", {"id"});
  std::vector<std::pair<std::string, std::string>> copies;  // table, columns
  for (const char* table : kRunTables) copies.emplace_back(table, shared_columns(db, table, {"id", "run"}));

  ImportedRuns out;
  SQLite::Transaction transaction(db);
  for (const std::int64_t id : chosen) {
    Origin origin{source_id, id};
    {
      SQLite::Statement travelled(db, "SELECT store_id, origin_run FROM source.run_origins WHERE run = ?");
      travelled.bind(1, id);
      if (travelled.executeStep()) origin = {travelled.getColumn(0).getString(), travelled.getColumn(1).getInt64()};
    }
    SQLite::Statement here(db, "SELECT (? = ? AND EXISTS (SELECT 1 FROM main.runs WHERE id = ?)) OR "
                               "EXISTS (SELECT 1 FROM main.run_origins WHERE store_id = ? AND origin_run = ?)");
    here.bind(1, origin.store_id);
    here.bind(2, target_id);
    here.bind(3, origin.run);
    here.bind(4, origin.store_id);
    here.bind(5, origin.run);
    here.executeStep();
    if (here.getColumn(0).getInt() != 0) {
      out.already_here.push_back(id);
      continue;
    }
    SQLite::Statement run(db, "INSERT INTO main.runs (" + run_columns + ") SELECT " + run_columns + " FROM source.runs WHERE id = ?");
    run.bind(1, id);
    run.exec();
    const std::int64_t copy = db.getLastInsertRowid();
    for (const auto& [table, columns] : copies) {
      const std::string list = columns.empty() ? std::string() : ", " + columns;
      SQLite::Statement rows(db, "INSERT INTO main." + quoted_identifier(table) + " (run" + list + ") SELECT ?" + list + " FROM source." + quoted_identifier(table) + " WHERE run = ?");
      rows.bind(1, copy);
      rows.bind(2, id);
      rows.exec();
    }
    SQLite::Statement from(db, "INSERT INTO main.run_origins (run, store_id, origin_run) VALUES (?, ?, ?)");
    from.bind(1, copy);
    from.bind(2, origin.store_id);
    from.bind(3, origin.run);
    from.exec();
    out.copied.emplace_back(id, copy);
  }
  transaction.commit();
  return out;
}

ImportedRuns export_runs(const std::filesystem::path& source, const std::vector<std::int64_t>& runs, const std::filesystem::path& out) {
  std::error_code error;
  if (std::filesystem::exists(out, error)) throw ConfigError("--out: " + out.string() + " exists; runs are exported into a new store");
  try {
    return import_runs(out, source, runs);
  } catch (...) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(out.string() + suffix, error);  // no half-made store left
    throw;
  }
}

}  // namespace xmc
