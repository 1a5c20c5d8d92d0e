#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace xmc {

/// Byte offset of the first byte that is not part of well-formed UTF-8 (overlong forms, surrogates
/// and code points above U+10FFFF are ill-formed), or std::string_view::npos when the text is valid.
std::size_t find_invalid_utf8(std::string_view text);

inline bool is_valid_utf8(std::string_view text) { return find_invalid_utf8(text) == std::string_view::npos; }

/// Replaces line breaks and tabs by spaces and trims the ends, so that a text fits on one line of a
/// `*.raw.txt` file.
std::string to_single_line(std::string_view text);

}  // namespace xmc
