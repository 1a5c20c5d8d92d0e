#include "engine/index/index_keys.h"

#include <charconv>
#include <set>

namespace xmc {

void parse_key_values(std::string_view text, const std::function<void(const std::string& why)>& refuse,
                      const std::function<void(const std::string& key, std::int64_t value)>& set) {
  std::set<std::string> seen;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) refuse("has \"" + std::string(item) + "\" where KEY=N was expected");
    const std::string key(item.substr(0, eq));
    const std::string_view value_text = item.substr(eq + 1);
    std::int64_t value = 0;
    const auto parsed = std::from_chars(value_text.data(), value_text.data() + value_text.size(), value);
    if (parsed.ec != std::errc() || parsed.ptr != value_text.data() + value_text.size() || value < 1)
      refuse("has " + key + "=" + std::string(value_text) + ", which is not a positive whole number");
    if (!seen.insert(key).second) refuse("gives " + key + " twice");
    set(key, value);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
}

}  // namespace xmc
