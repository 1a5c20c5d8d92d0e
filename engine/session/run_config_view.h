#pragma once
// Plain C++. A stored run's config as the workbench shows and compares it: flattened to dotted keys, each under
// its current name (a run stored before a key was renamed reads as one stored after it: its `grad_clip` is
// `optim.grad_clip`); keys newer than the run are not filled in. Widgets read configs only through this: each
// stored text is read once per process and kept.
#include <map>
#include <memory>
#include <string>

namespace xmc {

using FlatConfig = std::map<std::string, std::string>;  ///< key -> value as text (strings bare, the rest as JSON)

/// The flat config of a run stored as `config_json` (unknown keys kept as they are); text that is not JSON gives an
/// empty config. Thread-safe.
std::shared_ptr<const FlatConfig> flat_run_config(const std::string& config_json);

/// The value of `key` in `config`, or `fallback` when it has none.
std::string config_value_or(const FlatConfig& config, const std::string& key, const std::string& fallback = {});

}  // namespace xmc
