#include "engine/store/run_files.h"

#include <chrono>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>

#include "engine/core/atomic_file.h"
#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/store/run_store.h"

namespace xmc {
namespace {

std::filesystem::path own_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  const auto db = std::filesystem::absolute(db_path);
  // The whole file name: runs.sqlite and runs.db (or runs) in one folder get different folders.
  return db.parent_path() / (db.filename().string() + ".artifacts") / std::to_string(run_id);
}

struct Identity {
  std::string store;
  std::int64_t run = 0;
};

void write_identity(const std::filesystem::path& dir, const Identity& identity) {
  std::filesystem::create_directories(dir);
  AtomicFileWriter out(identity_file(dir));
  out.stream() << nlohmann::json{{"store", identity.store}, {"run", identity.run}}.dump() << "\n";
  out.commit();
}

/// The folder's identity; nullopt when it has no identity file. A file that does not parse names no owner
/// and is refused like another run's.
std::optional<Identity> read_identity(const std::filesystem::path& dir) {
  const auto file = identity_file(dir);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return std::nullopt;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto j = parse_bounded_json(text.str());
    if (j.is_object() && j.contains("store") && j["store"].is_string() && j.contains("run") && j["run"].is_number_integer())
      return Identity{j["store"].get<std::string>(), j["run"].get<std::int64_t>()};
  } catch (const nlohmann::json::exception&) {
  }
  return Identity{"(unreadable " + file.string() + ")", -1};
}

bool is_empty_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_empty(dir, ec) && !ec;
}

}  // namespace

std::filesystem::path fresh_run_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  const Identity self{RunStore(db_path).store_id(), run_id};
  const auto dir = own_directory(db_path, run_id);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    const auto found = read_identity(dir);
    const bool ours = found && found->store == self.store && found->run == self.run;
    if (!ours && !is_empty_folder(dir)) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
      auto aside = dir;
      aside += ".stale-" + std::to_string(seconds);
      std::filesystem::rename(dir, aside, ec);
      if (ec)
        throw InputError(dir.string(), "this folder holds files of another store's or run's run " + std::to_string(run_id) +
                                           " and cannot be moved aside (" + ec.message() + "); move or delete it");
    }
  }
  write_identity(dir, self);
  return dir;
}

std::filesystem::path verified_run_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  const auto dir = run_directory(db_path, run_id);
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return dir;
  RunStore store(db_path);
  const Identity self{store.store_id(), run_id};
  if (const auto found = read_identity(dir)) {
    if (found->store == self.store && found->run == self.run) return dir;
    throw InputError(dir.string(), "this folder belongs to run " + std::to_string(found->run) + " of store " + found->store + ", not to run " +
                                       std::to_string(run_id) + " of " + db_path.string() + " (" + self.store +
                                       "): its files are never used for another run");
  }
  // An earlier version's folder: adopted when nothing in it can be another run's.
  const auto recorded = store.latest_artifact(run_id, "checkpoint");
  if (is_empty_folder(dir) || (recorded && std::filesystem::path(*recorded).parent_path() == dir)) {
    write_identity(dir, self);
    return dir;
  }
  throw InputError(dir.string(), "this folder has no run identity and the store records no checkpoint of run " + std::to_string(run_id) +
                                     " in it: it may be another store's; move it away to train or use run " + std::to_string(run_id));
}

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
