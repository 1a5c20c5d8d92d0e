#pragma once
// Looking up a registered component by its name, with the refusal naming the known ones.
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace xmc {

/// The entry of `entries` whose `name` is `name`; otherwise throws ConfigError(refusal(known)), `known` being the
/// entries' names, comma-separated, in registration order.
template <class Entry, class Refusal>
const Entry& find_by_name(const std::vector<Entry>& entries, const std::string& name, Refusal&& refusal) {
  std::string known;
  for (const Entry& entry : entries) {
    if (entry.name == name) return entry;
    known += (known.empty() ? "" : ", ") + entry.name;
  }
  throw ConfigError(refusal(known));
}

}  // namespace xmc
