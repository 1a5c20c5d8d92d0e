#pragma once
// Builds a component's OptionGroup, one call per key, binding each key to a field of the component's options
// struct `Options` (or of TrainConfig itself for the run's own keys). Defaults are the struct's: written once,
// beside the field.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/config/option_group.h"
#include "engine/config/train_config.h"

namespace xmc {

template <class Options>
class OptionGroupBuilder {
 public:
  explicit OptionGroupBuilder(std::string name, std::string applies_when = "") {
    group_.name = std::move(name);
    group_.applies_when = std::move(applies_when);
    if constexpr (!std::is_same_v<Options, TrainConfig>) group_.options_type = typeid(Options);
  }

  /// The next key matters only when `condition` holds too ("encoder.type=bert").
  OptionGroupBuilder& when(std::string condition) {
    next_condition_ = std::move(condition);
    return *this;
  }
  /// The last key added was called `former_key` before: configs and --set still read it under that name.
  OptionGroupBuilder& formerly(std::string former_key) {
    group_.keys.back().info.former_keys.push_back(std::move(former_key));
    return *this;
  }
  /// The last key added cannot change when a run resumes.
  OptionGroupBuilder& fixed_on_resume() {
    group_.keys.back().info.fixed_on_resume = true;
    return *this;
  }

  OptionGroupBuilder& text(std::string key, std::string Options::*field, std::vector<std::string> choices, std::string help) {
    return add({key, "string", "", choices, std::move(help)},
               [key, field, choices](TrainConfig& c, const nlohmann::json& v) { target(c).*field = config_string(key, v, choices); },
               [field](const TrainConfig& c) { return nlohmann::json(source(c).*field); });
  }
  OptionGroupBuilder& path(std::string key, std::filesystem::path Options::*field, std::string help) {
    return add({key, "path", "", {}, std::move(help)},
               [key, field](TrainConfig& c, const nlohmann::json& v) { target(c).*field = config_string(key, v, {}); },
               [field](const TrainConfig& c) { return nlohmann::json((source(c).*field).string()); });
  }
  /// `max` bounds what a machine can do (threads, sizes that are allocated), so that a typo is a named error
  /// rather than a hang or an allocator's message.
  OptionGroupBuilder& integer(std::string key, std::int64_t Options::*field, std::int64_t min, std::int64_t max, std::string help) {
    return add({key, "int", "", {}, std::move(help)},
               [key, field, min, max](TrainConfig& c, const nlohmann::json& v) { target(c).*field = config_int(key, v, min, max); },
               [field](const TrainConfig& c) { return nlohmann::json(source(c).*field); });
  }
  OptionGroupBuilder& number(std::string key, double Options::*field, double min, double max, std::string help) {
    return add({key, "float", "", {}, std::move(help)},
               [key, field, min, max](TrainConfig& c, const nlohmann::json& v) { target(c).*field = config_float(key, v, min, max); },
               [field](const TrainConfig& c) { return nlohmann::json(source(c).*field); });
  }
  /// A list of at most `max_count` integers in [min, max]; `example` completes "expected ..., e.g. <example>".
  template <class Integer>
  OptionGroupBuilder& integers(std::string key, std::vector<Integer> Options::*field, std::int64_t min, std::int64_t max, std::size_t max_count,
                               bool allow_empty, std::string example, std::string help) {
    return add({key, "int_list", "", {}, std::move(help)},
               [=](TrainConfig& c, const nlohmann::json& v) {
                 if (!v.is_array() || v.size() > max_count || (!allow_empty && v.empty()))
                   bad_config_value(key, v,
                                    std::string(allow_empty ? "a list" : "a non-empty list") + " of at most " + std::to_string(max_count) +
                                        " integers in [" + std::to_string(min) + ", " + std::to_string(max) + "], e.g. " + example);
                 std::vector<Integer> values;
                 for (const auto& e : v) values.push_back(static_cast<Integer>(config_int(key, e, min, max)));
                 target(c).*field = std::move(values);
               },
               [field](const TrainConfig& c) { return nlohmann::json(source(c).*field); });
  }
  /// A key with its own reading and writing.
  OptionGroupBuilder& custom(ConfigKeyInfo info, std::function<void(TrainConfig&, const nlohmann::json&)> set,
                             std::function<nlohmann::json(const TrainConfig&)> get) {
    return add(std::move(info), std::move(set), std::move(get));
  }

  OptionGroupBuilder& validate(std::function<void(const TrainConfig&)> check) {
    group_.validate = std::move(check);
    return *this;
  }
  OptionGroupBuilder& check_resume(std::function<void(const TrainConfig&, const TrainConfig&)> check) {
    group_.check_resume = std::move(check);
    return *this;
  }

  OptionGroup build() const { return group_; }

  static Options& target(TrainConfig& c) {
    if constexpr (std::is_same_v<Options, TrainConfig>) return c;
    else return c.template edit<Options>();
  }
  static const Options& source(const TrainConfig& c) {
    if constexpr (std::is_same_v<Options, TrainConfig>) return c;
    else return c.template get<Options>();
  }

 private:
  OptionGroupBuilder& add(ConfigKeyInfo info, std::function<void(TrainConfig&, const nlohmann::json&)> set,
                          std::function<nlohmann::json(const TrainConfig&)> get) {
    info.applies_when = std::exchange(next_condition_, std::string());
    group_.keys.push_back({std::move(info), std::move(set), std::move(get)});
    return *this;
  }

  OptionGroup group_;
  std::string next_condition_;
};

}  // namespace xmc
