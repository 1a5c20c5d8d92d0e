#include "engine/store/run_files.h"

#include <string>
#include <system_error>

#include "engine/core/error.h"
#include "engine/store/run_store.h"

namespace xmc {
namespace {

std::filesystem::path own_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  const auto db = std::filesystem::absolute(db_path);
  // The whole file name: runs.sqlite and runs.db (or runs) in one folder get different folders.
  return db.parent_path() / (db.filename().string() + ".artifacts") / std::to_string(run_id);
}

}  // namespace

std::filesystem::path run_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  const auto own = own_directory(db_path, run_id);
  std::error_code ec;
  if (std::filesystem::exists(own, ec) || !std::filesystem::exists(db_path, ec)) return own;
  const auto legacy = std::filesystem::absolute(db_path).parent_path() / "runs" / std::to_string(run_id);
  if (!std::filesystem::exists(checkpoint_file(legacy), ec)) return own;
  try {
    const auto recorded = RunStore(db_path).latest_artifact(run_id, "checkpoint");
    if (recorded && std::filesystem::path(*recorded).parent_path() == legacy) return legacy;
  } catch (const std::exception&) {
    // Not a readable store, or no such run: its files (if any) are in its own folder.
  }
  return own;
}

void delete_run_and_files(const std::filesystem::path& db_path, std::int64_t run_id) {
  const auto files = own_directory(db_path, run_id);
  RunStore(db_path).delete_run(run_id);
  std::error_code ec;
  std::filesystem::remove_all(files, ec);
  if (ec) throw Error("run " + std::to_string(run_id) + " was deleted, but its files in " + files.string() + " could not be: " + ec.message());
}

}  // namespace xmc
