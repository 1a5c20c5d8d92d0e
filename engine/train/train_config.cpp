#include "engine/train/train_config.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/bounded_json.h"
#include "engine/core/utf8.h"
#include "engine/core/error.h"

namespace xmc {
namespace {

using json = nlohmann::json;

struct KeyBinding {
  ConfigKeyInfo info;
  std::function<void(TrainConfig&, const json&)> set;
  std::function<json(const TrainConfig&)> get;
};

[[noreturn]] void bad_value(const std::string& key, const json& value, const std::string& expected) {
  // A --set value that is not JSON arrives as a raw string, which may hold any bytes: shown with U+FFFD for
  // bytes that are not UTF-8 rather than letting the JSON writer throw.
  throw ConfigError(key + ": got " + value.dump(-1, ' ', false, json::error_handler_t::replace) + ", expected " + expected);
}

std::string as_string(const std::string& key, const json& v, const std::vector<std::string>& choices) {
  if (!v.is_string()) bad_value(key, v, choices.empty() ? "a string" : "one of the listed names");
  const auto s = v.get<std::string>();
  if (const auto at = find_invalid_utf8(s); at != std::string::npos)
    bad_value(key, json(s.substr(0, at) + "?"), "valid UTF-8 text (byte " + std::to_string(static_cast<unsigned char>(s[at])) + " at offset " +
                                                   std::to_string(at) + " is not)");
  if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    bad_value(key, v, "one of: " + list);
  }
  return s;
}

std::int64_t as_int(const std::string& key, const json& v, std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  const std::string expected = max == std::numeric_limits<std::int64_t>::max()
                                   ? "an integer >= " + std::to_string(min)
                                   : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!v.is_number_integer()) bad_value(key, v, expected);
  // Unsigned JSON integers above the int64 range must not wrap into it.
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    bad_value(key, v, expected);
  const auto i = v.get<std::int64_t>();
  if (i < min || i > max) bad_value(key, v, expected);
  return i;
}

double as_float(const std::string& key, const json& v, double min, double max) {
  if (!v.is_number()) bad_value(key, v, "a number");
  const double d = v.get<double>();
  if (!(d >= min && d <= max)) {
    std::ostringstream range;
    range << "a number in [" << min << ", " << max << "]";
    bad_value(key, v, range.str());
  }
  return d;
}

// Binding helpers: one line per key in the table below.
KeyBinding string_key(std::string key, std::string TrainConfig::*field, std::vector<std::string> choices, std::string doc) {
  ConfigKeyInfo info{key, "string", "", choices, std::move(doc)};
  return {info, [key, field, choices](TrainConfig& c, const json& v) { c.*field = as_string(key, v, choices); },
          [field](const TrainConfig& c) { return json(c.*field); }};
}
KeyBinding path_key(std::string key, std::filesystem::path TrainConfig::*field, std::string doc) {
  ConfigKeyInfo info{key, "path", "", {}, std::move(doc)};
  return {info, [key, field](TrainConfig& c, const json& v) { c.*field = as_string(key, v, {}); },
          [field](const TrainConfig& c) { return json((c.*field).string()); }};
}
// `max` bounds what a machine can do (threads, sizes that are allocated), so that a typo is a named error
// rather than a hang or an allocator's message.
KeyBinding int_key(std::string key, std::int64_t TrainConfig::*field, std::int64_t min, std::string doc,
                   std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  ConfigKeyInfo info{key, "int", "", {}, std::move(doc)};
  return {info, [key, field, min, max](TrainConfig& c, const json& v) { c.*field = as_int(key, v, min, max); },
          [field](const TrainConfig& c) { return json(c.*field); }};
}
KeyBinding float_key(std::string key, double TrainConfig::*field, double min, double max, std::string doc) {
  ConfigKeyInfo info{key, "float", "", {}, std::move(doc)};
  return {info, [key, field, min, max](TrainConfig& c, const json& v) { c.*field = as_float(key, v, min, max); },
          [field](const TrainConfig& c) { return json(c.*field); }};
}

/// One component's option group: its keys get the group's name and the condition under which they matter.
struct KeyGroup {
  std::string name;
  std::string applies_when;  ///< "" or "key=value[|value...]" (ConfigKeyInfo::applies_when)
  std::vector<KeyBinding> keys;
};

KeyBinding when(std::string applies_when, KeyBinding binding) {
  binding.info.applies_when = std::move(applies_when);
  return binding;
}

// The key table, registered component by component: a new method, encoder or sampler adds its group here
// (and its fields to TrainConfig); --list-keys, validation, JSON and the launch form follow.
std::vector<KeyGroup> key_groups() {
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"Run", "",
       {string_key("name", &TrainConfig::name, {}, "Run name shown in the run store"),
        path_key("dataset", &TrainConfig::dataset, "Dataset folder (trn/tst/lbl .raw.txt, trn/tst_X_Y.txt)"),
        string_key("method", &TrainConfig::method, {"dexml", "ngame", "unidec", "depsl", "irene"},
                   "Training recipe: DEXML dual encoder, NGAME (M1 encoder + M4 classifiers), UniDEC (dual encoder + classifiers, "
                   "pick-some-labels) or DEPSL (UniDEC's dual encoder alone)"),
        string_key("device", &TrainConfig::device, {}, "Torch device: cpu, cuda or cuda:N"),
        int_key("threads", &TrainConfig::threads, 0, "CPU threads for torch (0 = all cores)", 1024),
        string_key("prefetch", &TrainConfig::prefetch, {"auto", "on", "off"},
                   "Prepare the next batch (label pool, token ids, pinned and queued for the device) on a second thread while the current "
                   "one trains; auto = on a GPU only (on a CPU the training threads already use every core); training is the same either way"),
        {ConfigKeyInfo{"seed", "uint", "", {}, "Seed of sampling, initialisation and dropout (same seed = same run on CPU)"},
         [](TrainConfig& c, const json& v) { c.seed = static_cast<std::uint64_t>(as_int("seed", v, 0)); },
         [](const TrainConfig& c) { return json(c.seed); }}}},
      {"Distributed", "",
       {string_key("distributed.backend", &TrainConfig::distributed_backend, {"auto", "gloo", "nccl"},
                   "Collectives of a multi-process job (--nproc, --world-size): gloo (host memory), nccl (GPU to GPU) or auto "
                   "(nccl on GPUs when this build has it, else gloo)"),
        string_key("distributed.overlap", &TrainConfig::distributed_overlap, {"on", "off"},
                   "Multi-process: sum the dense gradients over the processes in buckets while backward still runs (on), or all after "
                   "it (off), in stages where each process trains a shard of the batch (UniDEC, DEPSL, NGAME's M4, IRENE; DEXML and "
                   "NGAME's M1 split one batch's work and sum after backward); the same sums, up to the order of additions")}},
      {"Loss and negatives", "",
       {string_key("loss", &TrainConfig::loss, {"triplet", "softmax", "decoupled_softmax", "softtopk", "supcon", "bce"},
                   "Loss over (query, label-pool) scores; decoupled_softmax drops other positives from each denominator"),
        string_key("negatives", &TrainConfig::negatives, {"inbatch", "hard", "all"},
                   "Negatives: other queries' positives, plus hard ones from an ANN shortlist, or all labels (gradient caching)"),
        when("loss=softmax|decoupled_softmax|softtopk|supcon",
             float_key("temperature", &TrainConfig::temperature, 1e-4, 100, "τ: scores are divided by it in softmax-family losses")),
        when("loss=triplet", float_key("margin", &TrainConfig::margin, 0, 4, "γ: margin of the triplet loss")),
        when("loss=triplet", int_key("hardest_k", &TrainConfig::hardest_k, 1, "Triplet: number of hardest in-batch negatives per positive")),
        when("loss=softtopk", float_key("topk_k", &TrainConfig::topk_k, 1e-3, 1e6, "SoftTop-k: the k of the soft top-k threshold"))}},
      {"Hard negatives", "negatives=hard;method=dexml|ngame",
       {int_key("hard.per_query", &TrainConfig::hard_per_query, 1, "Hard negatives sampled per query from its shortlist", 10000),
        int_key("hard.shortlist", &TrainConfig::shortlist_size, 1, "Shortlist size: exact top-k labels per query, positives removed", 100000),
        int_key("hard.refresh_every", &TrainConfig::shortlist_refresh_every, 1, "Epochs between shortlist refreshes")}},
      {"All-label negatives", "negatives=all;method=dexml|ngame",
       {int_key("all.label_chunk", &TrainConfig::label_chunk, 1, "Labels encoded per chunk when negatives = all", 1 << 24)}},
      {"Encoder", "",
       {string_key("encoder.type", &TrainConfig::encoder_type, {"bow", "bert"}, "Encoder: bag of words (fast on CPU) or a BERT-family transformer"),
        int_key("encoder.dim", &TrainConfig::encoder_dim, 2, "Embedding size d of the DE head (bow: also its word vectors)", 65536),
        path_key("encoder.path", &TrainConfig::encoder_path, "bert: local Hugging Face folder; bow: optional GloVe word-vector file"),
        when("encoder.type=bert", int_key("encoder.max_len", &TrainConfig::max_len, 3, "Tokens per text for bert (32 for titles, 128 for long text)", 8192)),
        when("encoder.type=bert", string_key("encoder.pooling", &TrainConfig::pooling, {"mean", "cls"}, "bert: mean over tokens or the [CLS] vector")),
        when("encoder.type=bert", string_key("encoder.precision", &TrainConfig::precision, {"fp32", "bf16", "fp16"},
                                             "bert forward under autocast: bf16 on GPUs (weights, optimiser and losses stay fp32); fp32 = none")),
        when("encoder.type=bow", int_key("encoder.min_count", &TrainConfig::min_word_count, 1, "bow: drop words seen fewer times in training text")),
        when("encoder.type=bow", string_key("encoder.bag", &TrainConfig::bow_bag, {"mean", "l2"},
                                            "bow: TF-IDF weights summing to 1 (a weighted mean), or with unit L2 norm "
                                            "(a text keeps one word vector's scale whatever its length, as L2-normalised TF-IDF)")),
        when("encoder.type=bow", string_key("encoder.block", &TrainConfig::bow_block, {"residual", "none"},
                                            "bow: a residual non-linear block after the bag, or none (a linear encoder)")),
        when("encoder.type=bow", float_key("encoder.init_std", &TrainConfig::bow_init_std, 1e-6, 100,
                                           "bow: standard deviation of the word vectors at the start (Adam moves them ~lr per "
                                           "step whatever their scale, so a smaller start learns them faster)")),
        float_key("encoder.dropout", &TrainConfig::dropout, 0, 0.9, "Dropout in the heads (and inside bert)")}},
      {"Batching", "",
       {string_key("sampler.type", &TrainConfig::sampler_type, {"random", "cluster"}, "Batches: random, or NGAME clusters of query embeddings"),
        when("sampler.type=cluster", int_key("sampler.cluster_size", &TrainConfig::cluster_size, 1, "NGAME cluster size C once clustering starts", 1 << 20)),
        when("sampler.type=cluster",
             int_key("sampler.start_epoch", &TrainConfig::sampler_start_epoch, 0, "First clustered epoch (0-based); earlier epochs are random")),
        when("sampler.type=cluster", int_key("sampler.refresh_every", &TrainConfig::sampler_refresh_every, 1,
                                             "Epochs between re-clustering (from the last pass's embeddings)")),
        when("sampler.type=cluster",
             {ConfigKeyInfo{"sampler.grow_at", "int_list", "", {}, "Epochs at which the cluster size C doubles"},
              [](TrainConfig& c, const json& v) {
                // Each entry doubles C: 30 doublings already exceed any label or query count.
           if (!v.is_array() || v.size() > 30) bad_value("sampler.grow_at", v, "a list of at most 30 epochs, e.g. [3, 6]");
                c.sampler_grow_at.clear();
                for (const auto& e : v) c.sampler_grow_at.push_back(as_int("sampler.grow_at", e, 0, 1000000));
              },
              [](const TrainConfig& c) { return json(c.sampler_grow_at); }})}},
      {"Optimisation", "",
       {int_key("epochs", &TrainConfig::epochs, 1, "Training epochs (NGAME: of stage M1)", 1000000),
        int_key("batch_size", &TrainConfig::batch_size, 2, "Queries per batch", 1 << 24),
        float_key("lr", &TrainConfig::lr, 0, 10, "Peak learning rate (AdamW)"),
        float_key("head_lr_scale", &TrainConfig::head_lr_scale, 0, 1e4, "Heads and classifiers learn at lr × this"),
        float_key("weight_decay", &TrainConfig::weight_decay, 0, 10, "AdamW weight decay (never on biases or norms)"),
        float_key("warmup", &TrainConfig::warmup, 0, 1, "Fraction of all steps spent warming the learning rate up"),
        string_key("schedule", &TrainConfig::schedule, {"linear", "cosine", "constant"}, "Learning-rate decay after warm-up"),
        float_key("grad_clip", &TrainConfig::grad_clip, 0, inf, "Clip the global gradient norm to this (0 = off)"),
        int_key("max_steps", &TrainConfig::max_steps, 0, "Stop after this many steps (0 = train all epochs)")}},
      {"NGAME", "method=ngame",
       {int_key("ngame.m4_epochs", &TrainConfig::ngame_m4_epochs, 0, "NGAME: epochs of classifier training (M4) on the frozen encoder"),
        float_key("ngame.fusion", &TrainConfig::ngame_fusion, 0, 1, "NGAME: weight of classifier scores in the fused ranking")}},
      {"Pick-some-labels", "method=unidec|depsl",
       {int_key("psl.positives", &TrainConfig::psl_positives, 1, "β: positives sampled per query into the batch's label pool", 100000),
        when("method=unidec|depsl;negatives=hard",
             int_key("psl.hard_negatives", &TrainConfig::psl_hard_negatives, 1, "η: hard negatives per query and epoch from its shortlist", 100000)),
        when("method=unidec|depsl;negatives=hard",
             int_key("psl.shortlist", &TrainConfig::psl_shortlist, 1, "Shortlist size: top labels by DE embedding per query, positives removed", 100000)),
        when("method=unidec|depsl;negatives=hard",
             int_key("psl.refresh_every", &TrainConfig::psl_refresh_every, 1,
                     "τ: epochs between shortlist refreshes (each query sees η·τ distinct shortlist labels per window)")),
        int_key("psl.pool_size", &TrainConfig::psl_pool_size, 0, "Cap on the batch's label pool (0 = none); sampled positives always stay"),
        string_key("psl.directions", &TrainConfig::psl_directions, {"both", "query_to_label"},
                   "Loss directions: queries ranking labels and labels ranking queries (0.5 each), or the first alone"),
        string_key("psl.de_head", &TrainConfig::psl_de_head, {"tanh_linear", "normalize"},
                   "DE embeddings: the DE head L2norm(Tanh(Linear(Φ))), or the encoder's output normalised (as NGAME)")}},
      {"UniDEC classifiers", "method=unidec",
       {float_key("unidec.lambda", &TrainConfig::unidec_lambda, 0, 1, "λ: loss = λ·dual-encoder loss + (1-λ)·classifier loss"),
        float_key("unidec.classifier_lr", &TrainConfig::unidec_classifier_lr, 0, 100, "Learning rate of the classifier table Ψ (its own)"),
        string_key("unidec.classifier_optimizer", &TrainConfig::unidec_classifier_optimizer, {"adamw", "lazy_adamw"},
                   "Update of Ψ: adamw (every row every step, the moments of rows outside the pool decaying) or lazy_adamw (only the rows "
                   "of the step's label pool, with their moments, as SparseAdam does: a step's cost no longer grows with the label count)"),
        float_key("unidec.bce_weight", &TrainConfig::unidec_bce_weight, 0, 100, "Weight of an auxiliary BCE on the classifier scores (0 = off)"),
        string_key("unidec.classifier_init", &TrainConfig::unidec_classifier_init, {"label_text", "random"},
                   "Classifiers start as the CLF head's encoding of each label's text, or random"),
        float_key("unidec.concat_weight", &TrainConfig::unidec_concat_weight, 0, 1,
                  "Concat inference ranks by (1-w)·de + w·clf (+ the label bias): w = 0.5 is the paper's plain sum"),
        float_key("unidec.concat_holdout", &TrainConfig::unidec_concat_holdout, 0, 0.5,
                  "Share of the training queries (with labels) held out of training; after training, concat's w is chosen "
                  "on them from 0, 0.1, ..., 1 by mean P@1 + P@3 + P@5 (0 = none held out: w = unidec.concat_weight)"),
        string_key("unidec.clf_head", &TrainConfig::unidec_clf_head, {"linear", "none"},
                   "CLF head g2: Linear + dropout (the paper's), or none (classifiers over the encoder's normalised output)"),
        string_key("unidec.label_bias", &TrainConfig::unidec_label_bias, {"none", "learned"},
                   "A learned per-label bias added to classifier scores (a label prior; none in the paper)")}},
      {"IRENE", "method=irene",
       {int_key("irene.base_run", &TrainConfig::irene_base_run, 0,
                "Finished ngame or unidec run (same store, same zero-shot split) whose encoder and classifiers IRENE builds on"),
        string_key("irene.generator", &TrainConfig::irene_generator, {"transformer", "weighted_sum"},
                   "Classifier generator: one transformer layer trained on pseudo-novel labels, or the training-free weighted sum"),
        int_key("irene.neighbours", &TrainConfig::irene_neighbours, 1, "K: nearest observed labels whose classifiers a new one is made from", 64),
        float_key("irene.temperature", &TrainConfig::irene_temperature, 1e-4, 100, "T: neighbours are weighted by softmax(similarity / T)"),
        float_key("irene.positive_weight", &TrainConfig::irene_positive_weight, 1e-3, 1e6, "C: weight of the positives in the generator's BCE"),
        int_key("irene.heads", &TrainConfig::irene_heads, 1, "Attention heads of the generator's transformer layer (divide the classifiers' size)", 64),
        float_key("irene.selection_margin", &TrainConfig::irene_selection_margin, 0, 10,
                  "A trained generator replaces the kept one (first the weighted sum) only when its mean hit@10 + hit@1 over the "
                  "selection labels is ahead by this many standard errors of the paired per-label differences (0 = any gain)"),
        string_key("irene.calibration", &TrainConfig::irene_calibration, {"mean_query", "none"},
                   "Scores of a synthesized classifier u get q̄·(w̄ − u) added (q̄ the mean training query, w̄ the mean observed "
                   "classifier): it scores an average query as an average observed classifier does")}},
      {"Evaluation", "",
       {{ConfigKeyInfo{"eval.k", "int_list", "", {}, "Cut-offs k reported for P@k, nDCG@k, PSP@k, R@k"},
         [](TrainConfig& c, const json& v) {
           if (!v.is_array() || v.empty()) bad_value("eval.k", v, "a non-empty list of positive integers, e.g. [1, 3, 5]");
           c.eval_k.clear();
           for (const auto& e : v) c.eval_k.push_back(static_cast<int>(as_int("eval.k", e, 1, 100000)));
         },
         [](const TrainConfig& c) { return json(c.eval_k); }},
        int_key("eval.every", &TrainConfig::eval_every, 0, "Epochs between evaluations (0 = only at the end)"),
        int_key("eval.top", &TrainConfig::eval_top, 1, "Predictions kept per test query", 100000),
        string_key("eval.index", &TrainConfig::eval_index, {},
                   "How test queries search the labels: exact, hnsw[:M,ef,efc] or faiss:<factory> (approximate: faster on many labels, some recall lost)"),
        int_key("checkpoint.every", &TrainConfig::checkpoint_every, 0, "Epochs between checkpoints (0 = only at the end)"),
        int_key("checkpoint.every_steps", &TrainConfig::checkpoint_every_steps, 0,
                "Also a checkpoint every this many steps, inside epochs too (0 = off): what a crash or kill -9 can lose"),
        float_key("checkpoint.every_minutes", &TrainConfig::checkpoint_every_minutes, 0, 1e6,
                  "Also a checkpoint once this many minutes of training passed since the last one (0 = off)"),
        int_key("tsne.query", &TrainConfig::tsne_query, -1,
                "Training row whose negatives are shown in the t-SNE snapshots (-1 = the first row with >= 3 labels)"),
        int_key("tsne.every", &TrainConfig::tsne_every, 0,
                "Evaluations between t-SNE snapshots of that query's negatives (0 = off; the final evaluation always gets one)")}},
  };
}

const std::vector<KeyBinding>& bindings() {
  static const std::vector<KeyBinding> table = [] {
    std::vector<KeyBinding> t;
    for (KeyGroup& group : key_groups())
      for (KeyBinding& b : group.keys) {
        b.info.group = group.name;
        if (b.info.applies_when.empty()) b.info.applies_when = group.applies_when;
        t.push_back(std::move(b));
      }
    const TrainConfig defaults;
    for (auto& b : t) b.info.default_value = b.get(defaults).dump();
    return t;
  }();
  return table;
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

const KeyBinding& binding(const std::string& key) {
  const KeyBinding* closest = nullptr;
  std::size_t best = 4;  // suggest only keys within 3 edits
  for (const auto& b : bindings()) {
    if (b.info.key == key) return b;
    const std::size_t d = edit_distance(key, b.info.key);
    if (d < best) {
      best = d;
      closest = &b;
    }
  }
  throw ConfigError("unknown config key '" + key + "'" + (closest ? "; did you mean '" + closest->info.key + "'?" : std::string()) +
                    " (`xmc train --list-keys` lists them all)");
}

void flatten(const json& j, const std::string& prefix, std::vector<std::pair<std::string, json>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) flatten(*it, key, out);
    else out.emplace_back(key, *it);
  }
}

}  // namespace

std::vector<KeyCondition> key_conditions(const ConfigKeyInfo& info) {
  std::vector<KeyCondition> out;
  std::stringstream conditions(info.applies_when);
  for (std::string condition; std::getline(conditions, condition, ';');) {
    const auto eq = condition.find('=');
    KeyCondition c{condition.substr(0, eq), {}};
    std::stringstream values(eq == std::string::npos ? std::string() : condition.substr(eq + 1));
    for (std::string value; std::getline(values, value, '|');) c.values.push_back(value);
    out.push_back(std::move(c));
  }
  return out;
}

bool key_applies(const ConfigKeyInfo& info, const TrainConfig& config) {
  for (const KeyCondition& condition : key_conditions(info)) {
    const json value = binding(condition.key).get(config);
    if (!value.is_string()) continue;
    if (std::find(condition.values.begin(), condition.values.end(), value.get<std::string>()) == condition.values.end()) return false;
  }
  return true;
}

const std::vector<ConfigKeyInfo>& train_config_keys() {
  static const std::vector<ConfigKeyInfo> keys = [] {
    std::vector<ConfigKeyInfo> k;
    for (const auto& b : bindings()) k.push_back(b.info);
    return k;
  }();
  return keys;
}

TrainConfig parse_train_config(const std::string& json_text, const std::string& source) {
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
      binding(key).set(config, value);
    } catch (const ConfigError& e) {
      throw ConfigError(source + ": " + e.what());
    }
  }
  return config;
}

TrainConfig load_train_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), std::filesystem::exists(path) ? "cannot open file for reading" : "no such file");
  std::stringstream text;
  text << in.rdbuf();
  // A relative dataset path in a config file is relative to the working directory, as on the command line.
  return parse_train_config(text.str(), path.string());
}

void apply_config_overrides(TrainConfig& config, const std::vector<std::string>& assignments) {
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
    binding(key).set(config, value);
  }
}

std::string to_json(const TrainConfig& config) {
  json j = json::object();
  for (const auto& b : bindings()) j[b.info.key] = b.get(config);
  return j.dump();
}

std::int64_t total_epochs(const TrainConfig& config) {
  return config.epochs + (config.method == "ngame" ? config.ngame_m4_epochs : 0);
}

void validate(const TrainConfig& config) {
  if (config.dataset.empty()) throw ConfigError("dataset: no dataset folder given (e.g. --set dataset=datasets/demo/wordnet-20k)");
  if (!std::filesystem::is_directory(config.dataset)) throw ConfigError("dataset: '" + config.dataset.string() + "' is not a folder");
  if (config.device != "cpu" && config.device.rfind("cuda", 0) != 0)
    throw ConfigError("device: got \"" + config.device + "\", expected cpu, cuda or cuda:N");
  if (config.encoder_type == "bert" && config.encoder_path.empty())
    throw ConfigError("encoder.path: bert needs a local Hugging Face folder (config.json, model.safetensors, vocab.txt)");
  if (config.method == "irene" && config.irene_base_run <= 0)
    throw ConfigError("irene.base_run: irene builds on a finished ngame or unidec run of the same store: give its id (--set irene.base_run=3)");
  for (int k : config.eval_k)
    if (k > config.eval_top) throw ConfigError("eval.k: k = " + std::to_string(k) + " is larger than eval.top = " + std::to_string(config.eval_top));
}

}  // namespace xmc
