#include "engine/config/train_config.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/core/memory_budget.h"
#include "engine/config/option_group_builder.h"
#include "engine/config/run_option_groups.h"
#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

using json = nlohmann::json;
using Run = OptionGroupBuilder<TrainConfig>;
constexpr std::int64_t kNoMax = std::numeric_limits<std::int64_t>::max();

/// Every key of every group, by key, in registration order.
const std::vector<const OptionKey*>& all_keys() {
  static const std::vector<const OptionKey*> keys = [] {
    std::vector<const OptionKey*> out;
    for (const OptionGroup& group : registered_option_groups())
      for (const OptionKey& key : group.keys) out.push_back(&key);
    return out;
  }();
  return keys;
}

/// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The key named `key`, or formerly named so (then a notice is appended to `notes`, when given); null when none is.
const OptionKey* find_option_key(const std::string& key, ConfigReadNotes* notes = nullptr) {
  for (const OptionKey* k : all_keys()) {
    if (k->info.key == key) return k;
    if (std::find(k->info.former_keys.begin(), k->info.former_keys.end(), key) != k->info.former_keys.end()) {
      if (notes != nullptr) notes->renamed.push_back("config key '" + key + "' is now '" + k->info.key + "' (read under its new name)");
      return k;
    }
  }
  return nullptr;
}

/// find_option_key(), or ConfigError naming `key` and the closest key within 3 edits.
const OptionKey& option_key(const std::string& key, ConfigReadNotes* notes = nullptr) {
  if (const OptionKey* found = find_option_key(key, notes)) return *found;
  const OptionKey* closest = nullptr;
  std::size_t best = 4;  // suggest only keys within 3 edits
  for (const OptionKey* k : all_keys()) {
    const std::size_t d = edit_distance(key, k->info.key);
    if (d < best) {
      best = d;
      closest = k;
    }
  }
  throw ConfigError("unknown config key '" + key + "'" + (closest ? "; did you mean '" + closest->info.key + "'?" : std::string()) +
                    " (`xmc train --list-keys` lists them all)");
}

/// Sets `key` (or its former name) in `config`, noting in `notes` the key given under its current name.
void set_key(TrainConfig& config, const std::string& key, const json& value, ConfigReadNotes* notes) {
  const OptionKey& option = option_key(key, notes);
  option.set(config, value);
  if (notes != nullptr) notes->keys.push_back(option.info.key);
}

void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, json>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) flatten(*it, key, out);
    else out.emplace_back(key, *it);
  }
}

bool group_applies(const OptionGroup& group, const TrainConfig& config) {
  ConfigKeyInfo condition;
  condition.applies_when = group.applies_when;
  return key_applies(condition, config);
}

}  // namespace

OptionGroup run_option_group(const std::vector<std::string>& methods) {
  std::string method_help = "Training recipe:";
  for (const MethodInfo& m : registered_method_infos()) method_help += " " + m.name + " (" + m.description + ");";
  method_help.pop_back();
  return Run("Run")
      .text("name", &TrainConfig::name, {}, "Run name shown in the run store")
      .path("dataset", &TrainConfig::dataset, "Dataset folder (trn/tst/lbl .raw.txt, trn/tst_X_Y.txt)")
      .fixed_on_resume()
      .text("method", &TrainConfig::method, methods, method_help)
      .fixed_on_resume()
      .text("device", &TrainConfig::device, {}, "Torch device: cpu, cuda or cuda:N")
      .integer("threads", &TrainConfig::threads, 0, 1024, "CPU threads for torch (0 = all cores)")
      .integer("memory_mb", &TrainConfig::memory_mb, 0, std::int64_t{1} << 20,
               "Memory budget in MB of the large temporaries (score blocks of searches and evaluations, shortlist slices, clustering "
               "scores): peak memory is about the model, its optimiser state and the label embeddings plus this (0 = from the machine: "
               "1/16 of its memory, 64 to 512 MB)")
      .text("prefetch", &TrainConfig::prefetch, {"auto", "on", "off"},
            "Prepare the next batch (label pool, token ids, pinned and queued for the device) on a second thread while the current "
            "one trains; auto = on a GPU only (on a CPU the training threads already use every core); training is the same either way")
      .custom(ConfigKeyInfo{"seed", "uint", "", {}, "Seed of sampling, initialisation and dropout (same seed = same run on CPU)"},
              [](TrainConfig& c, const json& v) { c.seed = static_cast<std::uint64_t>(config_int("seed", v, 0)); },
              [](const TrainConfig& c) { return json(c.seed); })
      .validate([](const TrainConfig& config) {
        if (config.dataset.empty()) throw ConfigError("dataset: no dataset folder given (e.g. --set dataset=datasets/demo/wordnet-20k)");
        if (!std::filesystem::is_directory(config.dataset)) throw ConfigError("dataset: '" + config.dataset.string() + "' is not a folder");
        if (config.device != "cpu" && config.device.rfind("cuda", 0) != 0)
          throw ConfigError("device: got \"" + config.device + "\", expected cpu, cuda or cuda:N");
        if (config.memory_mb != 0 && config.memory_mb < kMinMemoryBudgetMb)
          throw ConfigError("memory_mb: " + std::to_string(config.memory_mb) + " MB is too little for the temporaries: at least " +
                            std::to_string(kMinMemoryBudgetMb) + ", or 0 for this machine's default (" + std::to_string(default_memory_budget_mb()) + " MB)");
      })
      .build();
}

OptionGroup distributed_option_group() {
  return Run("Distributed")
      .text("distributed.backend", &TrainConfig::distributed_backend, {"auto", "gloo", "nccl"},
            "Collectives of a multi-process job (--nproc, --world-size): gloo (host memory), nccl (GPU to GPU) or auto "
            "(nccl on GPUs when this build has it, else gloo)")
      .text("distributed.overlap", &TrainConfig::distributed_overlap, {"on", "off"},
            "Multi-process: sum the dense gradients over the processes in buckets while backward still runs (on), or all after "
            "it (off), in stages where each process trains a shard of the batch (UniDEC, DEPSL, NGAME's M4, IRENE; DEXML and "
            "NGAME's M1 split one batch's work and sum after backward); the same sums, up to the order of additions")
      .build();
}

OptionGroup optimisation_option_group() {
  return Run("Optimisation")
      .integer("epochs", &TrainConfig::epochs, 1, 1000000, "Training epochs (NGAME: of stage M1)")
      .integer("batch_size", &TrainConfig::batch_size, 2, 1 << 24, "Queries per batch")
      .fixed_on_resume()
      .number("lr", &TrainConfig::lr, 0, 10, "Peak learning rate (AdamW)")
      .number("head_lr_scale", &TrainConfig::head_lr_scale, 0, 1e4, "Heads and classifiers learn at lr × this")
      .number("weight_decay", &TrainConfig::weight_decay, 0, 10, "AdamW weight decay (never on biases or norms)")
      .integer("max_steps", &TrainConfig::max_steps, 0, kNoMax, "Stop after this many steps (0 = train all epochs)")
      .build();
}

OptionGroup evaluation_option_group() {
  return Run("Evaluation")
      .custom(ConfigKeyInfo{"eval.k", "int_list", "", {}, "Cut-offs k reported for P@k, nDCG@k, PSP@k, R@k"},
              [](TrainConfig& c, const json& v) {
                if (!v.is_array() || v.empty()) bad_config_value("eval.k", v, "a non-empty list of positive integers, e.g. [1, 3, 5]");
                c.eval_k.clear();
                for (const auto& e : v) c.eval_k.push_back(static_cast<int>(config_int("eval.k", e, 1, 100000)));
              },
              [](const TrainConfig& c) { return json(c.eval_k); })
      .integer("eval.every", &TrainConfig::eval_every, 0, kNoMax, "Epochs between evaluations (0 = only at the end)")
      .integer("eval.top", &TrainConfig::eval_top, 1, 100000, "Predictions kept per test query")
      .integer("eval.max_queries", &TrainConfig::eval_max_queries, 0, kNoMax,
               "Evaluations before the last rank an even sample of at most this many test queries (the last ranks them all; "
               "0 = all): for test sets of hundreds of thousands")
      .text("eval.index", &TrainConfig::eval_index, {},
            "How test queries search the labels: auto (default: ivf from eval.approximate_above labels, exact below), exact, "
            "ivf[:probe=64,size=N], hnsw[:M,ef,efc] or faiss:<factory>. Approximate: faster on many labels, some recall lost (at 1.3M labels "
            "ivf:probe=64 kept 0.54-0.93 of UniDEC's exact top 10: bench/RESULTS.md); auto tunes the probe as hard-negative shortlists do "
            "(lowered by a third while each mode keeps 0.95 of its exact top 10 on 500 test queries, else raised by half until it does), "
            "and searches exactly when half the clusters do not. hard.search takes the same descriptions. The log gives each mode's "
            "recall@10 against exact on 1,000 sampled test queries")
      .integer("eval.approximate_above", &TrainConfig::eval_approximate_above, 1, kNoMax,
               "With eval.index = auto: the label count from which evaluations search the labels through an inverted file (exact "
               "search costs test queries x labels: ~1 h for 970k queries at 1.3M labels on 2 cores)")
      .integer("eval.set_aside_mb", &TrainConfig::eval_set_aside_mb, 0, kNoMax,
               "Evaluations between epochs write the optimiser's moments and the hard-negative shortlists (idle while they run) to a "
               "file beside the checkpoint and read them back after, when they take at least this many MB: their memory then holds "
               "the evaluation's label matrices instead of lying under them (2 GB at 1.3M labels). 0 = always")
      .integer("checkpoint.every", &TrainConfig::checkpoint_every, 0, kNoMax, "Epochs between checkpoints (0 = only at the end)")
      .integer("checkpoint.every_steps", &TrainConfig::checkpoint_every_steps, 0, kNoMax,
               "Also a checkpoint every this many steps, inside epochs too (0 = off): what a crash or kill -9 can lose")
      .number("checkpoint.every_minutes", &TrainConfig::checkpoint_every_minutes, 0, 1e6,
              "Also a checkpoint once this many minutes of training passed since the last one (0 = off)")
      .integer("tsne.query", &TrainConfig::tsne_query, -1, kNoMax,
               "Training row whose negatives are shown in the t-SNE snapshots (-1 = the first row with >= 3 labels)")
      .integer("tsne.every", &TrainConfig::tsne_every, 0, kNoMax,
               "Evaluations between t-SNE snapshots of that query's negatives (0 = off; the final evaluation always gets one)")
      .validate([](const TrainConfig& config) {
        for (int k : config.eval_k)
          if (k > config.eval_top)
            throw ConfigError("eval.k: k = " + std::to_string(k) + " is larger than eval.top = " + std::to_string(config.eval_top));
      })
      .build();
}

namespace {

/// For a method that trains no encoder by a loss (xrlinear), the keys that still shape its runs: the run's own,
/// the evaluation's and checkpoints' (not the t-SNE of negatives it has none of), max_steps, and its own keys.
bool applies_without_an_encoder(const ConfigKeyInfo& info) {
  if (info.group == "Run") return info.key != "prefetch";
  if (info.group == "Evaluation") return info.key.rfind("tsne.", 0) != 0;
  return info.key == "max_steps" || info.applies_when.find("method=") != std::string::npos;
}

/// For a method built on another run (IRENE), whose encoder, tokenizer and training data pipeline are that run's:
/// not the keys that shape an encoder, its loss, its negatives or its batches, nor the t-SNE of negatives, nor
/// several processes (it trains in one).
bool applies_on_another_run(const ConfigKeyInfo& info) {
  static const char* const kBaseRunsGroups[] = {"Encoder", "Bag-of-words encoder", "Transformer encoder", "Decoder encoder", "Images",
                                                "Loss",    "Negatives",            "Batching",            "Clustered batches", "Distributed"};
  for (const char* group : kBaseRunsGroups)
    if (info.group == group) return false;
  return info.key.rfind("tsne.", 0) != 0;
}

}  // namespace

const ConfigKeyInfo* find_config_key(const std::string& key) {
  const OptionKey* found = find_option_key(key);
  return found == nullptr ? nullptr : &found->info;
}

bool key_applies(const ConfigKeyInfo& info, const TrainConfig& config) {
  const MethodInfo* method = find_method_info(config.method);
  if (method != nullptr && !method->trains_encoder && !applies_without_an_encoder(info)) return false;
  if (method != nullptr && method->base_run && !info.group.empty() && !applies_on_another_run(info)) return false;
  for (const KeyCondition& condition : key_conditions(info)) {
    const json value = option_key(condition.key).get(config);
    if (!value.is_string()) continue;
    if (std::find(condition.values.begin(), condition.values.end(), value.get<std::string>()) == condition.values.end()) return false;
  }
  return true;
}

const std::vector<ConfigKeyInfo>& train_config_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    const TrainConfig defaults;
    std::vector<ConfigKeyInfo> k;
    for (const OptionKey* key : all_keys()) {
      k.push_back(key->info);
      k.back().default_value = key->get(defaults).dump();
    }
    return k;
  }();
  return keys;
}

TrainConfig parse_train_config(const std::string& json_text, const std::string& source, ConfigReadNotes* notes) {
  json j;
  try {
    j = parse_bounded_json(json_text);
  } catch (const json::parse_error& e) {
    throw ConfigError(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ConfigError(source + ": expected a JSON object of config keys");
  std::vector<std::pair<std::string, json>> entries;
  flatten(j, "", entries);
  TrainConfig config;
  for (const auto& [key, value] : entries) {
    try {
      set_key(config, key, value, notes);
    } catch (const ConfigError& e) {
      throw ConfigError(source + ": " + e.what());
    }
  }
  return config;
}

TrainConfig load_train_config(const std::filesystem::path& path, ConfigReadNotes* notes) {
  require_regular_file(path);
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), "cannot open file for reading");
  std::stringstream text;
  text << in.rdbuf();
  // A relative dataset path in a config file is relative to the working directory, as on the command line.
  return parse_train_config(text.str(), path.string(), notes);
}

void apply_config_overrides(TrainConfig& config, const std::vector<std::string>& assignments, ConfigReadNotes* notes) {
  for (const auto& a : assignments) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + a + ": expected KEY=VALUE, e.g. --set lr=0.001");
    const std::string key = a.substr(0, eq);
    const std::string text = a.substr(eq + 1);
    json value;
    try {
      value = parse_bounded_json(text);
    } catch (const json::parse_error&) {
      value = text;  // bare strings: --set method=ngame
    }
    set_key(config, key, value, notes);
  }
}

std::vector<std::string> refuse_inapplicable_keys(const std::vector<std::string>& keys, const TrainConfig& config) {
  std::vector<std::string> ignored;
  const MethodInfo* method = find_method_info(config.method);
  for (const std::string& key : keys) {
    const OptionKey& option = option_key(key);
    if (key_applies(option.info, config)) continue;
    std::string failed;  // the key's own conditions that do not hold, with this run's values
    for (const KeyCondition& condition : key_conditions(option.info)) {
      const json value = option_key(condition.key).get(config);
      if (!value.is_string() || std::find(condition.values.begin(), condition.values.end(), value.get<std::string>()) != condition.values.end())
        continue;
      std::string allowed;
      for (const std::string& v : condition.values) allowed += (allowed.empty() ? "" : "|") + v;
      failed += (failed.empty() ? "" : ", and ") + condition.key + "=" + allowed + " (this run has " + condition.key + "=" + value.get<std::string>() + ")";
    }
    if (!failed.empty())
      throw ConfigError(key + ": it matters only when " + failed + "; remove it, or change what it depends on (`xmc train --list-keys --config ...` lists "
                        "the keys that apply)");
    // A method that ignores whole groups (no encoder trained by a loss, or another run's encoder): said, not refused,
    // so that one command line can train several methods.
    if (method != nullptr && !method->trains_encoder) ignored.push_back(key + " does not shape " + config.method + " runs (no encoder trained by a loss); ignored");
    else if (method != nullptr && method->base_run) ignored.push_back(key + " does not shape " + config.method + " runs (they build on another run's encoder); ignored");
  }
  return ignored;
}

std::string to_json(const TrainConfig& config) {
  json j = json::object();
  for (const OptionKey* key : all_keys()) j[key->info.key] = key->get(config);
  return j.dump();
}

std::int64_t total_epochs(const TrainConfig& config) {
  const MethodInfo& method = method_info(config.method);
  const ComponentConfig components = component_config(config);
  const std::int64_t first = method.first_stage_epochs ? method.first_stage_epochs(components) : config.epochs;
  return first + (method.later_stage_epochs ? method.later_stage_epochs(components) : 0);
}

void validate(const TrainConfig& config) {
  for (const OptionGroup& group : registered_option_groups())
    if (group.validate && group_applies(group, config)) group.validate(config);
}

void check_resume_config(const TrainConfig& before, const TrainConfig& after) {
  std::string changed;
  for (const OptionKey* key : all_keys())
    if (key->info.fixed_on_resume && key->get(before) != key->get(after)) changed += (changed.empty() ? "" : ", ") + key->info.key;
  if (!changed.empty())
    throw ConfigError("resume: " + changed + " cannot change when resuming a run (they shape the model or the data it trains on)");
  for (const OptionGroup& group : registered_option_groups())
    if (group.check_resume) group.check_resume(before, after);
}

}  // namespace xmc
