#pragma once
// Reads the keys of a Hugging Face config.json (plain C++): each error names the file and the key.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"

namespace xmc {

/// A config.json's text as a JSON object; InputError naming `source` for text that is not one.
inline nlohmann::json parse_hf_config_object(const std::string& json_text, const std::string& source) {
  nlohmann::json json;
  try {
    json = parse_bounded_json(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(source, std::string("bad JSON: ") + e.what());
  }
  if (!json.is_object()) throw InputError(source, "bad JSON: not a JSON object");
  return json;
}

/// The text of a model folder's config.json; InputError naming it when it is missing.
inline std::string read_hf_config_text(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::exists(file, error)) throw InputError(file.string(), "cannot open (a Hugging Face model folder needs config.json)");
  return read_whole_file(file);
}

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
