#pragma once
// Plain C++. The KEY=N parameters of a search description ("probe=32,size=300" in "ivf:probe=32,size=300"), read
// alike wherever such descriptions are taken: index descriptions (index_kind.h) and hard-negative shortlists'
// hard.search, which share their vocabulary.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace xmc {

/// "KEY=N,KEY=N" -> set(key, value) for each, with N a positive whole number. A malformed item or a key given twice
/// calls `refuse` with why ("gives probe twice"), which must throw.
void parse_key_values(std::string_view text, const std::function<void(const std::string& why)>& refuse,
                      const std::function<void(const std::string& key, std::int64_t value)>& set);

}  // namespace xmc
