#pragma once
// The configuration of a training run: what every run has (dataset, method, device, seed, optimisation,
// evaluation, checkpoints, distribution) as fields, and each component's own options (encoder, loss,
// negatives, batching, the method's) as structs declared beside the component, in `components`.
// Every key, its type, default, allowed values and one-line description come from the components' option
// groups (engine/registry/option_groups.cpp lists them), which the CLI validates against and the GUI's
// launch form builds its fields and tooltips from. Configs are JSON objects (nested or dotted keys);
// `--set key=value` overrides use the same dotted keys.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/config/component_options.h"
#include "engine/config/config_key.h"

namespace xmc {

struct TrainConfig {
  // Run
  std::string name;                 ///< run name shown in the store ("" = "<method> <encoder> <dataset>")
  std::filesystem::path dataset;    ///< dataset folder (canonical layout)
  std::string method = "dexml";     ///< a registered method (engine/registry/component_list.h)
  std::string device = "cpu";       ///< cpu | cuda | cuda:N
  std::int64_t threads = 0;         ///< CPU threads for torch (0 = all cores)
  std::int64_t memory_mb = 0;       ///< budget of the large temporaries (engine/core/memory_budget.h); 0 = from the machine
  std::string prefetch = "auto";    ///< next batch prepared on a second thread: auto (GPU only) | on | off
  std::uint64_t seed = 1;           ///< seeds sampling, initialisation and dropout
  std::string distributed_backend = "auto";  ///< multi-process collectives: auto | gloo | nccl
  std::string distributed_overlap = "on";   ///< multi-process: dense gradients summed during backward (on | off)

  // Optimisation
  std::int64_t epochs = 10;
  std::int64_t batch_size = 256;
  double lr = 1e-3;                        ///< peak learning rate of the encoder
  double head_lr_scale = 1.0;              ///< heads and classifiers learn at lr × this
  double weight_decay = 0.01;              ///< AdamW decay (never on biases, norms)
  // Clipping, the schedule and AdamW's tables: the optimiser's own options (engine/optim/optim_options.h).
  std::int64_t max_steps = 0;              ///< stop after this many steps (0 = all epochs); for smoke tests

  // Evaluation and checkpoints
  std::vector<int> eval_k{1, 3, 5, 10};
  std::int64_t eval_every = 1;             ///< epochs between evaluations (0 = only at the end)
  std::int64_t eval_top = 100;             ///< predictions kept per test query
  std::int64_t eval_max_queries = 0;       ///< evaluations before the last rank an even sample of this many test queries (0 = all)
  std::string eval_index = "auto";         ///< index_factory spec the evaluation searches labels with, or auto
  std::int64_t eval_set_aside_mb = 256;    ///< evaluations between epochs set the optimiser's moments and shortlists aside from this size
  std::int64_t eval_approximate_above = 1000000;  ///< with eval.index auto: the label count from which the search is ivf
  std::int64_t checkpoint_every = 1;       ///< epochs between checkpoints (0 = only at the end)
  std::int64_t checkpoint_every_steps = 0; ///< also a checkpoint every this many steps (0 = off)
  double checkpoint_every_minutes = 5;     ///< also a checkpoint when this much training time passed since the last (0 = off)

  // t-SNE of one training query's negatives (taken after evaluations)
  std::int64_t tsne_query = -1;            ///< training row shown (-1 = the first row with >= 3 labels)
  std::int64_t tsne_every = 1;             ///< evaluations between snapshots (0 = off); the final one always gets one

  /// Each component's options, by type (e.g. get<EncoderOptions>().dim): its defaults unless set.
  ComponentOptions components;
  template <class Options>
  const Options& get() const {
    return components.get<Options>();
  }
  template <class Options>
  Options& edit() {
    return components.edit<Options>();
  }
};

/// Every key, group by group, in registration order.
const std::vector<ConfigKeyInfo>& train_config_keys();

/// The key named `key`, or formerly named so (ConfigKeyInfo::former_keys); null when no key is. Its
/// default_value is not filled in (train_config_keys() has it).
const ConfigKeyInfo* find_config_key(const std::string& key);

/// Whether a key matters for `config`: its applies_when condition holds (always true without one).
bool key_applies(const ConfigKeyInfo& info, const TrainConfig& config);

/// What reading a config or overrides noticed, for the caller to say or check.
struct ConfigReadNotes {
  std::vector<std::string> renamed;  ///< one notice per key given under a former name ("'grad_clip' is now 'optim.grad_clip' ...")
  std::vector<std::string> keys;     ///< every key given, under its current name, in the order read
};

/// Parses a JSON object (nested objects flatten to dotted keys). Unknown keys and values of the wrong
/// type or out of range throw ConfigError naming the key, the value and what is expected. Keys of older
/// stores' configs that were renamed (ConfigKeyInfo::former_keys) are read under their new names; `notes`,
/// when given, gets a notice per such key and the keys given.
TrainConfig parse_train_config(const std::string& json_text, const std::string& source = "config",
                               ConfigReadNotes* notes = nullptr);
TrainConfig load_train_config(const std::filesystem::path& path, ConfigReadNotes* notes = nullptr);

/// Applies "key=value" overrides (value parsed as JSON when it parses, else taken as a string); former key
/// names are read as in parse_train_config.
void apply_config_overrides(TrainConfig& config, const std::vector<std::string>& assignments,
                            ConfigReadNotes* notes = nullptr);

/// The full config as one flat JSON object with every key (stored with each run).
std::string to_json(const TrainConfig& config);

/// Throws ConfigError naming the first of `keys` (keys a user set) whose own condition does not hold for `config`
/// (ConfigKeyInfo::applies_when: encoder.tokenizer on a bag-of-words run, images.max on an encoder that fuses no
/// images, margin without the triplet loss), and what it depends on. Returns a notice for each key that the run's
/// method ignores as a whole (the encoder's keys for a method without one): those are said, not refused.
std::vector<std::string> refuse_inapplicable_keys(const std::vector<std::string>& keys, const TrainConfig& config);

/// Cross-key checks (e.g. the dataset exists, the components' own checks); throws ConfigError.
void validate(const TrainConfig& config);

/// Throws ConfigError naming the keys when `after` (a resumed run's config with its overrides) changes a key
/// that cannot change under a checkpoint (ConfigKeyInfo::fixed_on_resume, and the components' own rules).
void check_resume_config(const TrainConfig& before, const TrainConfig& after);

/// Epochs of the whole run: `epochs`, plus the epochs of the method's later stages (NGAME's M4).
std::int64_t total_epochs(const TrainConfig& config);

}  // namespace xmc
