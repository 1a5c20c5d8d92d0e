#pragma once
#include <filesystem>

namespace xmc {

/// Where the GUI and CLI keep runs unless told otherwise: $XMC_DB, else
/// $XDG_DATA_HOME/xmc-workbench/runs.sqlite, else ~/.local/share/xmc-workbench/runs.sqlite.
std::filesystem::path default_run_store_path();

}  // namespace xmc
