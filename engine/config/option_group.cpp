#include "engine/config/option_group.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/utf8.h"

namespace xmc {

using json = nlohmann::json;

void bad_config_value(const std::string& key, const json& value, const std::string& expected) {
  // A --set value that is not JSON arrives as a raw string, which may hold any bytes: shown with U+FFFD for
  // bytes that are not UTF-8 rather than letting the JSON writer throw.
  throw ConfigError(key + ": got " + value.dump(-1, ' ', false, json::error_handler_t::replace) + ", expected " + expected);
}

std::string config_string(const std::string& key, const json& v, const std::vector<std::string>& choices) {
  if (!v.is_string()) bad_config_value(key, v, choices.empty() ? "a string" : "one of the listed names");
  const auto s = v.get<std::string>();
  if (const auto at = find_invalid_utf8(s); at != std::string::npos)
    bad_config_value(key, json(s.substr(0, at) + "?"),
                     "valid UTF-8 text (byte " + std::to_string(static_cast<unsigned char>(s[at])) + " at offset " + std::to_string(at) +
                         " is not)");
  if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    bad_config_value(key, v, "one of: " + list);
  }
  return s;
}

std::int64_t config_int(const std::string& key, const json& v, std::int64_t min, std::int64_t max) {
  const std::string expected = max == std::numeric_limits<std::int64_t>::max()
                                   ? "an integer >= " + std::to_string(min)
                                   : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!v.is_number_integer()) bad_config_value(key, v, expected);
  // Unsigned JSON integers above the int64 range must not wrap into it.
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    bad_config_value(key, v, expected);
  const auto i = v.get<std::int64_t>();
  if (i < min || i > max) bad_config_value(key, v, expected);
  return i;
}

double config_float(const std::string& key, const json& v, double min, double max) {
  if (!v.is_number()) bad_config_value(key, v, "a number");
  const double d = v.get<double>();
  if (!(d >= min && d <= max)) {
    std::ostringstream range;
    range << "a number in [" << min << ", " << max << "]";
    bad_config_value(key, v, range.str());
  }
  return d;
}

}  // namespace xmc
