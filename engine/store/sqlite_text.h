#pragma once
// Plain C++. Text SQLite is given: a file as a URI with parameters (read-only, immutable), a table or column name
// as a quoted identifier. Used wherever a store is opened or attached beside another.
#include <filesystem>
#include <string>

namespace xmc {

/// `path` (made absolute) as an SQLite URI with `parameters` ("mode=ro", "immutable=1"): every byte but letters,
/// digits and "/._-~" %-escaped.
std::string sqlite_uri(const std::filesystem::path& path, const std::string& parameters);

/// `name` as an SQL identifier: in double quotes, its own double quotes doubled.
std::string quoted_identifier(const std::string& name);

}  // namespace xmc
