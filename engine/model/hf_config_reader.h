#pragma once
// Reads the keys of a Hugging Face config.json (plain C++): each error names the file and the key.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "engine/core/error.h"

namespace xmc {

class HfConfigReader {
 public:
  HfConfigReader(const nlohmann::json& json, std::string source) : json_(json), source_(std::move(source)) {}

  bool has(const std::string& key) const { return json_.contains(key) && !json_.at(key).is_null(); }

  std::int64_t required_int(const std::string& key) const {
    if (!has(key)) throw ConfigError(source_ + ": missing key '" + key + "'");
    return int_value(key);
  }
  std::int64_t optional_int(const std::string& key, std::int64_t fallback) const {
    return has(key) ? int_value(key) : fallback;
  }
  double optional_double(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const auto& value = json_.at(key);
    if (!value.is_number()) throw invalid(key, "a number");
    return value.get<double>();
  }
  std::string optional_string(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const auto& value = json_.at(key);
    if (!value.is_string()) throw invalid(key, "a string");
    return value.get<std::string>();
  }
  bool optional_bool(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto& value = json_.at(key);
    if (!value.is_boolean()) throw invalid(key, "true or false");
    return value.get<bool>();
  }
  const nlohmann::json& json() const { return json_; }
  const std::string& source() const { return source_; }
  ConfigError invalid(const std::string& key, const std::string& expected) const {
    return ConfigError(source_ + ": key '" + key + "' must be " + expected + ", got " + json_.at(key).dump());
  }

 private:
  std::int64_t int_value(const std::string& key) const {
    const auto& value = json_.at(key);
    if (!value.is_number_integer()) throw invalid(key, "an integer");
    return value.get<std::int64_t>();
  }

  const nlohmann::json& json_;
  std::string source_;
};

}  // namespace xmc
