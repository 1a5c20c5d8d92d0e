#include "engine/text/well_formed_utf8.h"

#include <utf8proc.h>

namespace xmc {

std::string replace_ill_formed_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_uint8_t bytes[4];
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {
      cp = 0xFFFD;
      n = 1;
    }
    const auto len = utf8proc_encode_char(cp, bytes);
    out.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(len));
    p += n;
    left -= n;
  }
  return out;
}

}  // namespace xmc
