#include "engine/index/index_kind.h"

#include <charconv>
#include <set>

#include "engine/core/error.h"

namespace xmc {

void refuse_index_spec(const std::string& spec, const std::string& why) {
  std::string known;
  for (const IndexKind& kind : registered_index_kinds())
    known += (known.empty() ? "" : ", ") + kind.syntax + (kind.available ? "" : " (not in this build)");
  throw ConfigError("index: \"" + spec + "\" " + why + "; known: " + known);
}

void parse_index_keys(const std::string& spec, std::string_view text, const std::function<void(const std::string& key, std::int64_t value)>& set) {
  std::set<std::string> seen;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) refuse_index_spec(spec, "has \"" + std::string(item) + "\" where KEY=N was expected");
    const std::string key(item.substr(0, eq));
    const std::string_view value_text = item.substr(eq + 1);
    std::int64_t value = 0;
    const auto parsed = std::from_chars(value_text.data(), value_text.data() + value_text.size(), value);
    if (parsed.ec != std::errc() || parsed.ptr != value_text.data() + value_text.size() || value < 1)
      refuse_index_spec(spec, "has " + key + "=" + std::string(value_text) + ", which is not a positive whole number");
    if (!seen.insert(key).second) refuse_index_spec(spec, "gives " + key + " twice");
    set(key, value);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
}

}  // namespace xmc
