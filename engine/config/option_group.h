#pragma once
// A component's option group: its keys (typed, with defaults, help, choices and the condition under which
// they matter), bound to the fields of its options struct, and the checks that span its keys. Groups are
// made with OptionGroupBuilder (option_group_builder.h) in the component's own folder and listed in
// engine/registry/option_groups.cpp; JSON is read and written through them alone (train_config.cpp).
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "engine/config/config_key.h"

namespace xmc {

struct TrainConfig;

struct OptionKey {
  ConfigKeyInfo info;
  std::function<void(TrainConfig&, const nlohmann::json&)> set;  ///< throws ConfigError naming the key
  std::function<nlohmann::json(const TrainConfig&)> get;
};

struct OptionGroup {
  std::string name;          ///< shown as the group's heading ("Encoder", "UniDEC classifiers")
  std::string applies_when;  ///< the group's keys matter only then ("" = always); added to each key's own
  std::vector<OptionKey> keys;
  /// The options struct its keys fill (typeid(void) for the run's own keys, which are TrainConfig's fields).
  std::type_index options_type = typeid(void);
  /// Checks across the group's keys, run by validate() when the group applies (may be empty).
  std::function<void(const TrainConfig&)> validate;
  /// Rules a resumed run's config must keep beyond the keys marked fixed_on_resume (may be empty).
  std::function<void(const TrainConfig& before, const TrainConfig& after)> check_resume;
};

/// Every option group of the run and its registered components, in the order --list-keys and the launch form
/// show them, each key's applies_when already joined with its group's. Defined by engine/registry.
const std::vector<OptionGroup>& registered_option_groups();

// Value checks shared by the builders: each throws ConfigError "<key>: got <value>, expected <what>".
[[noreturn]] void bad_config_value(const std::string& key, const nlohmann::json& value, const std::string& expected);
std::string config_string(const std::string& key, const nlohmann::json& value, const std::vector<std::string>& choices);
std::int64_t config_int(const std::string& key, const nlohmann::json& value, std::int64_t min,
                        std::int64_t max = std::numeric_limits<std::int64_t>::max());
double config_float(const std::string& key, const nlohmann::json& value, double min, double max);

}  // namespace xmc
