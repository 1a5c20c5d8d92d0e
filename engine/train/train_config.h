#pragma once
// The configuration of a training run: every key, its type, default, allowed values and one-line
// description live in one table (train_config_keys()), which the CLI validates against and the GUI's
// launch form builds its fields and tooltips from. Configs are JSON objects (nested or dotted keys);
// `--set key=value` overrides use the same dotted keys.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

struct TrainConfig {
  // Run
  std::string name;                 ///< run name shown in the store ("" = "<method> <encoder> <dataset>")
  std::filesystem::path dataset;    ///< dataset folder (canonical layout)
  std::string method = "dexml";     ///< dexml | ngame | unidec | depsl | irene
  std::string device = "cpu";       ///< cpu | cuda | cuda:N
  std::int64_t threads = 0;         ///< CPU threads for torch (0 = all cores)
  std::string prefetch = "auto";    ///< next batch prepared on a second thread: auto (GPU only) | on | off
  std::uint64_t seed = 1;           ///< seeds sampling, initialisation and dropout
  std::string distributed_backend = "auto";  ///< multi-process collectives: auto | gloo | nccl
  std::string distributed_overlap = "on";   ///< multi-process: dense gradients summed during backward (on | off)

  // Loss and negatives
  std::string loss = "decoupled_softmax";  ///< triplet | softmax | decoupled_softmax | softtopk | supcon | bce
  std::string negatives = "inbatch";       ///< inbatch | hard | all
  double temperature = 0.05;               ///< τ of the softmax-family losses
  double margin = 0.3;                     ///< γ of the triplet loss
  std::int64_t hardest_k = 10;             ///< triplet: k hardest in-batch negatives
  double topk_k = 5;                       ///< SoftTop-k: k
  std::int64_t hard_per_query = 2;         ///< hard negatives sampled per query from its shortlist
  std::int64_t shortlist_size = 100;       ///< size of each query's hard-negative shortlist
  std::int64_t shortlist_refresh_every = 2;  ///< epochs between shortlist refreshes
  std::int64_t label_chunk = 4096;         ///< labels encoded per chunk with negatives = all (gradient caching)

  // Encoder
  std::string encoder_type = "bow";        ///< bow | bert
  std::int64_t encoder_dim = 256;          ///< d: embedding size of the DE head
  std::filesystem::path encoder_path;      ///< bert: local Hugging Face folder; bow: optional GloVe text file
  std::int64_t max_len = 32;               ///< tokens per text (bert)
  std::string pooling = "mean";            ///< bert pooling: mean | cls
  std::string precision = "fp32";          ///< bert forward: fp32 | bf16 | fp16 autocast (weights and losses stay fp32)
  std::int64_t min_word_count = 1;         ///< bow: words seen fewer times in training text are dropped
  std::string bow_bag = "mean";            ///< bow: TF-IDF weights summing to 1 (mean) or with unit L2 norm (l2)
  std::string bow_block = "residual";      ///< bow: after the bag, a residual non-linear block, or none (a linear encoder)
  double bow_init_std = 1.0;               ///< bow: standard deviation of the word vectors at the start
  double dropout = 0.1;                    ///< dropout in heads (and bert)

  // Batching
  std::string sampler_type = "random";     ///< random | cluster
  std::int64_t cluster_size = 16;          ///< NGAME: cluster size C once clustering starts
  std::int64_t sampler_start_epoch = 1;    ///< first clustered epoch (0-based; earlier epochs are random)
  std::int64_t sampler_refresh_every = 1;  ///< epochs between re-clustering
  std::vector<std::int64_t> sampler_grow_at;  ///< epochs at which C doubles

  // Optimisation
  std::int64_t epochs = 10;
  std::int64_t batch_size = 256;
  double lr = 1e-3;                        ///< peak learning rate of the encoder
  double head_lr_scale = 1.0;              ///< heads and classifiers learn at lr × this
  double weight_decay = 0.01;              ///< AdamW decay (never on biases, norms)
  double warmup = 0.05;                    ///< fraction of all steps spent warming up
  std::string schedule = "linear";         ///< linear | cosine | constant decay after warm-up
  double grad_clip = 1.0;                  ///< max global gradient norm (0 = off)
  std::int64_t max_steps = 0;              ///< stop after this many steps (0 = all epochs); for smoke tests

  // NGAME stage M4
  std::int64_t ngame_m4_epochs = 3;        ///< epochs of classifier training with the encoder frozen
  double ngame_fusion = 0.5;               ///< fused score = w·classifier + (1-w)·embedding

  // UniDEC and DEPSL: pick-some-labels batches (DESIGN.md section 3)
  std::int64_t psl_positives = 3;          ///< β: positives sampled per query into the label pool
  std::int64_t psl_hard_negatives = 6;     ///< η: hard negatives per query per epoch (negatives = hard)
  std::int64_t psl_shortlist = 100;        ///< top labels by DE embedding per query (positives removed)
  std::int64_t psl_refresh_every = 5;      ///< τ: epochs between shortlist refreshes; η·τ entries are used per window
  std::int64_t psl_pool_size = 0;          ///< cap on the batch's label pool (0 = none); sampled positives always stay
  std::string psl_directions = "both";     ///< both (q→l and l→q, 0.5 each) | query_to_label
  std::string psl_de_head = "tanh_linear"; ///< DE embeddings: tanh_linear (g1 = L2norm(Tanh(Linear))) | normalize (L2norm(Φ))

  // UniDEC's classifiers
  double unidec_lambda = 0.5;              ///< λ: loss = λ·L_DE + (1-λ)·L_CLF
  double unidec_classifier_lr = 0.01;      ///< learning rate of the classifier table Ψ
  std::string unidec_classifier_optimizer = "adamw";  ///< Ψ's update: adamw (every row, every step) | lazy_adamw (the pooled rows)
  double unidec_bce_weight = 0;            ///< weight of an auxiliary BCE on the classifier scores (0 = off)
  std::string unidec_classifier_init = "label_text";  ///< label_text (Ψ_l = CLF head of the label's text) | random
  double unidec_concat_weight = 0.5;       ///< w: concat inference ranks by (1-w)·de + w·clf (+ label bias)
  double unidec_concat_holdout = 0;        ///< share of the training queries held out to choose w (0 = w as given)
  std::string unidec_clf_head = "linear";  ///< g2: linear (Linear + dropout) | none (classifiers over Φ itself)
  std::string unidec_label_bias = "none";  ///< none | learned: classifier score + b_l (a label prior)

  // IRENE (classifier synthesis for novel labels, on a finished ngame or unidec run of the same store)
  std::int64_t irene_base_run = 0;           ///< the run whose encoder and classifiers IRENE builds on
  std::string irene_generator = "transformer";  ///< transformer | weighted_sum (training-free)
  std::int64_t irene_neighbours = 3;         ///< K nearest observed labels by embedding (never the label itself)
  double irene_temperature = 0.1;            ///< T of the neighbours' softmax weights
  double irene_positive_weight = 10;         ///< C: weight of positives in the generator's BCE
  std::int64_t irene_heads = 4;              ///< attention heads of the generator's transformer layer
  double irene_selection_margin = 2;         ///< a trained generator replaces the kept one only when ahead by this many standard errors
  std::string irene_calibration = "mean_query";  ///< mean_query | none: offsets of synthesized classifiers' scores

  // Evaluation and checkpoints
  std::vector<int> eval_k{1, 3, 5, 10};
  std::int64_t eval_every = 1;             ///< epochs between evaluations (0 = only at the end)
  std::int64_t eval_top = 100;             ///< predictions kept per test query
  std::string eval_index = "exact";        ///< index_factory spec the evaluation searches labels with
  std::int64_t checkpoint_every = 1;       ///< epochs between checkpoints (0 = only at the end)
  std::int64_t checkpoint_every_steps = 0; ///< also a checkpoint every this many steps (0 = off)
  double checkpoint_every_minutes = 5;     ///< also a checkpoint when this much training time passed since the last (0 = off)

  // t-SNE of one training query's negatives (taken after evaluations)
  std::int64_t tsne_query = -1;            ///< training row shown (-1 = the first row with >= 3 labels)
  std::int64_t tsne_every = 1;             ///< evaluations between snapshots (0 = off); the final one always gets one
};

/// One configurable key: what the CLI validates and the GUI shows.
struct ConfigKeyInfo {
  std::string key;                  ///< dotted key, e.g. "sampler.cluster_size"
  std::string type;                 ///< string | path | int | uint | float | int_list
  std::string default_value;        ///< as JSON text
  std::vector<std::string> choices; ///< allowed values for strings with a fixed set
  std::string description;          ///< one line for --help and tooltips
  std::string group;                ///< the component's option group ("Encoder", "NGAME", ...): --list-keys and the
                                    ///< launch form show keys by group, in table order
  std::string applies_when;         ///< "" = always; else "key=value[|value...]" conditions joined by ';' (all must
                                    ///< hold): the key matters only for that choice of method, encoder, sampler,
                                    ///< negatives or loss ("encoder.type=bert", "negatives=hard;method=dexml|ngame")
};

/// Every key, registered group by group (train_config.cpp).
const std::vector<ConfigKeyInfo>& train_config_keys();

/// One condition of ConfigKeyInfo::applies_when: `key` holds one of `values`.
struct KeyCondition {
  std::string key;
  std::vector<std::string> values;
};
std::vector<KeyCondition> key_conditions(const ConfigKeyInfo& info);

/// Whether a key matters for `config`: its applies_when condition holds (always true without one).
bool key_applies(const ConfigKeyInfo& info, const TrainConfig& config);

/// Parses a JSON object (nested objects flatten to dotted keys). Unknown keys and values of the wrong
/// type or out of range throw ConfigError naming the key, the value and what is expected.
TrainConfig parse_train_config(const std::string& json_text, const std::string& source = "config");
TrainConfig load_train_config(const std::filesystem::path& path);

/// Applies "key=value" overrides (value parsed as JSON when it parses, else taken as a string).
void apply_config_overrides(TrainConfig& config, const std::vector<std::string>& assignments);

/// The full config as one flat JSON object with every key (stored with each run).
std::string to_json(const TrainConfig& config);

/// Cross-key checks (e.g. the dataset exists, cluster sizes are positive); throws ConfigError.
void validate(const TrainConfig& config);

/// Epochs of the whole run: `epochs`, plus NGAME's stage-M4 epochs.
std::int64_t total_epochs(const TrainConfig& config);

}  // namespace xmc
