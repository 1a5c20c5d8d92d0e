#pragma once
// Inputs are regular files: opening a FIFO for reading waits for a writer forever, and a directory or a device
// is not data. Plain C++.
#include <filesystem>

namespace xmc {

/// Throws InputError naming `path` unless it is a regular file (links followed): "no such file", "is a
/// directory", "is a FIFO (named pipe), not a regular file", ... Checked before opening, so it never blocks.
void require_regular_file(const std::filesystem::path& path);

/// The same as a test: false for anything require_regular_file() refuses (never throws).
bool is_regular_file_path(const std::filesystem::path& path);

}  // namespace xmc
