#pragma once
// `*.raw.txt` files: one UTF-8 text per line.
#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

/// Reads every line; a line that is not valid UTF-8 throws InputError with its line number and byte
/// column. When `expected_lines` >= 0 a different count is an error naming both counts.
std::vector<std::string> read_text_lines(const std::filesystem::path& path, long long expected_lines = -1);

/// Writes one text per line (line breaks inside a text become spaces), atomically.
void write_text_lines(const std::filesystem::path& path, const std::vector<std::string>& lines);

}  // namespace xmc
