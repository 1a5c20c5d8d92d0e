#include "engine/session/default_store_path.h"

#include <cstdlib>

#include "engine/core/error.h"

namespace xmc {

std::filesystem::path default_run_store_path() {
  if (const char* db = std::getenv("XMC_DB"); db != nullptr && *db != '\0') return db;
  std::filesystem::path data_home;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') data_home = xdg;
  else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') data_home = std::filesystem::path(home) / ".local/share";
  else data_home = ".";
  return data_home / "xmc-workbench" / "runs.sqlite";
}

void require_existing_run_store(const std::filesystem::path& db) {
  std::error_code ec;
  if (std::filesystem::is_directory(db, ec)) throw InputError(db.string(), "is a folder, not a run store (pass the store's .sqlite file)");
  if (!std::filesystem::is_regular_file(db, ec))
    throw InputError(db.string(), "no run store here (train a run with `xmc train --db " + db.string() + "` first, or check --db)");
  if (std::filesystem::file_size(db, ec) == 0) throw InputError(db.string(), "is an empty file, not a run store");
}

}  // namespace xmc
