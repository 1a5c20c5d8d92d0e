#pragma once
// Plain C++. `s` without the leading and trailing characters of `blanks` (spaces and tabs unless told): what the
// line-based readers of dataset files strip from their fields.
#include <string_view>

namespace xmc {

inline std::string_view trim(std::string_view s, std::string_view blanks = " \t") {
  const std::size_t first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

}  // namespace xmc
