#pragma once
#include <filesystem>

namespace xmc {

/// Where the GUI and CLI keep runs unless told otherwise: $XMC_DB, else
/// $XDG_DATA_HOME/xmc-workbench/runs.sqlite, else ~/.local/share/xmc-workbench/runs.sqlite.
std::filesystem::path default_run_store_path();

/// For commands that only read runs: throws InputError naming `db` when no store is there, so that a
/// mistyped --db is reported instead of silently creating an empty store.
void require_existing_run_store(const std::filesystem::path& db);

}  // namespace xmc
