#pragma once
// Reading a small file whole, and a JSON file whole (plain C++): config.json, tokenizer_config.json, a shard
// index, a run's base_model.json. The file must be a regular file (a FIFO would block the reader forever).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace xmc {

/// The bytes of `file`. Throws InputError naming it when it is not a regular file (require_regular_file) or
/// cannot be read.
std::string read_whole_file(const std::filesystem::path& file);

/// parse_bounded_json(read_whole_file(file)); text that is not JSON throws InputError(file, "bad JSON: ...").
nlohmann::json read_json_file(const std::filesystem::path& file);

}  // namespace xmc
