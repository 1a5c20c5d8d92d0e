#pragma once
// A count read from a text field of the project's own files (vocabularies' document frequencies and headers).
#include <charconv>
#include <cstdint>
#include <string_view>

namespace xmc {

/// True when all of `text` is a non-negative decimal integer (no sign, no spaces) that fits, stored in `value`.
inline bool parse_count(std::string_view text, std::int64_t& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 0;
}

}  // namespace xmc
