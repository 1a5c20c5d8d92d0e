#include "engine/config/config_key.h"

#include <sstream>

namespace xmc {

std::vector<KeyCondition> key_conditions(const ConfigKeyInfo& info) {
  std::vector<KeyCondition> out;
  std::stringstream conditions(info.applies_when);
  for (std::string condition; std::getline(conditions, condition, ';');) {
    const auto eq = condition.find('=');
    KeyCondition c{condition.substr(0, eq), {}};
    std::stringstream values(eq == std::string::npos ? std::string() : condition.substr(eq + 1));
    for (std::string value; std::getline(values, value, '|');) c.values.push_back(value);
    out.push_back(std::move(c));
  }
  return out;
}

std::string both_conditions(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + ";" + b;
}

}  // namespace xmc
