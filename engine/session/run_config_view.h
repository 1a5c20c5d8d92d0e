#pragma once
// Plain C++. A stored run's config as the workbench shows and compares it: flattened to dotted keys, each under
// its current name (a run stored before a key was renamed reads as one stored after it: its `grad_clip` is
// `optim.grad_clip`); keys newer than the run are not filled in. Widgets read configs only through this: each
// stored text is read once per process and kept.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace xmc {

struct TrainConfig;

using FlatConfig = std::map<std::string, std::string>;  ///< key -> value as text (strings bare, the rest as JSON)

/// The flat config of a run stored as `config_json` (unknown keys kept as they are); text that is not JSON gives an
/// empty config. Thread-safe.
std::shared_ptr<const FlatConfig> flat_run_config(const std::string& config_json);

/// The run config stored as `config_json`, read as a training config (former key names under today's), once per
/// process and kept. Null when this version cannot read it; `why`, when given, then says why. Thread-safe.
std::shared_ptr<const TrainConfig> stored_train_config(const std::string& config_json, std::string* why = nullptr);

/// The registered keys of the run config stored as `config_json` that do not shape its run (a dexml run's irene.*,
/// xrlinear.*, psl.* ...), under today's names; none when this version cannot read it.
std::vector<std::string> keys_not_shaping_run(const std::string& config_json);

/// The value of `key` in `config`, or `fallback` when it has none.
std::string config_value_or(const FlatConfig& config, const std::string& key, const std::string& fallback = {});

}  // namespace xmc
