#include "engine/session/run_config_view.h"

#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "engine/config/train_config.h"
#include "engine/core/bounded_json.h"

namespace xmc {
namespace {

void flatten(const nlohmann::json& j, const std::string& prefix, FlatConfig& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items()) flatten(value, prefix.empty() ? key : prefix + "." + key, out);
    return;
  }
  out[prefix] = j.is_string() ? j.get<std::string>() : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

FlatConfig read_flat(const std::string& config_json) {
  FlatConfig stored;
  try {
    flatten(parse_bounded_json(config_json), "", stored);  // nested past 256 levels: refused, not a stack overflow
  } catch (const std::exception&) {
    return {};
  }
  // Keys given under a former name go under today's (unless the config has both: then today's stands). Nothing
  // else is filled in: a key newer than the run is not shown with a value the run may never have had.
  FlatConfig flat;
  for (auto& [key, value] : stored) {
    const ConfigKeyInfo* info = find_config_key(key);
    const std::string& name = info != nullptr ? info->key : key;
    if (name != key && stored.count(name) != 0) continue;
    flat[name] = std::move(value);
  }
  return flat;
}

}  // namespace

std::shared_ptr<const FlatConfig> flat_run_config(const std::string& config_json) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const FlatConfig>> read;
  {
    const std::lock_guard lock(mutex);
    if (const auto it = read.find(config_json); it != read.end()) return it->second;
  }
  auto flat = std::make_shared<const FlatConfig>(read_flat(config_json));
  const std::lock_guard lock(mutex);
  constexpr std::size_t kMostKept = 20000;  // a store's runs many times over; then it starts afresh
  if (read.size() >= kMostKept) read.clear();
  return read.emplace(config_json, std::move(flat)).first->second;
}

std::shared_ptr<const TrainConfig> stored_train_config(const std::string& config_json, std::string* why) {
  struct Read {
    std::shared_ptr<const TrainConfig> config;
    std::string why;  ///< when it did not read
  };
  static std::mutex mutex;
  static std::unordered_map<std::string, Read> read;
  Read result;
  {
    const std::lock_guard lock(mutex);
    if (const auto it = read.find(config_json); it != read.end()) result = it->second;
  }
  if (!result.config && result.why.empty()) {
    try {
      result.config = std::make_shared<const TrainConfig>(parse_train_config(config_json, "the run's configuration"));
    } catch (const std::exception& e) {
      result.why = e.what();
    }
    const std::lock_guard lock(mutex);
    constexpr std::size_t kMostKept = 20000;  // as flat_run_config
    if (read.size() >= kMostKept) read.clear();
    read.emplace(config_json, result);
  }
  if (why != nullptr) *why = result.why;
  return result.config;
}

std::vector<std::string> keys_not_shaping_run(const std::string& config_json) {
  const std::shared_ptr<const TrainConfig> config = stored_train_config(config_json);
  if (!config) return {};
  std::vector<std::string> out;
  for (const auto& [key, value] : *flat_run_config(config_json))
    if (const ConfigKeyInfo* info = find_config_key(key); info != nullptr && !key_applies(*info, *config)) out.push_back(key);
  return out;
}

std::string config_value_or(const FlatConfig& config, const std::string& key, const std::string& fallback) {
  const auto it = config.find(key);
  return it == config.end() ? fallback : it->second;
}

}  // namespace xmc
