#pragma once
// Any bytes as well-formed UTF-8, for the tokenizers that take whatever a file or a user gives them (plain C++).
#include <string>
#include <string_view>

namespace xmc {

/// `text` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, so utf8proc accepts it.
std::string replace_ill_formed_utf8(std::string_view text);

}  // namespace xmc
