#include "engine/index/index_kind.h"

#include "engine/core/error.h"
#include "engine/index/index_keys.h"

namespace xmc {

void refuse_index_spec(const std::string& spec, const std::string& why) {
  std::string known;
  for (const IndexKind& kind : registered_index_kinds())
    known += (known.empty() ? "" : ", ") + kind.syntax + (kind.available ? "" : " (not in this build)");
  throw ConfigError("index: \"" + spec + "\" " + why + "; known: " + known);
}

void parse_index_keys(const std::string& spec, std::string_view text, const std::function<void(const std::string& key, std::int64_t value)>& set) {
  parse_key_values(text, [&spec](const std::string& why) { refuse_index_spec(spec, why); }, set);
}

}  // namespace xmc
