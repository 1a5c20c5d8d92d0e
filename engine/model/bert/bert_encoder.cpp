#include "engine/model/bert/bert_encoder.h"

#include "engine/model/autocast.h"
#include "engine/model/dropout.h"

#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/core/atomic_file.h"
#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/model/hf_config_reader.h"
#include "engine/model/hf_weights.h"
#include "engine/model/safetensors_file.h"
#include "engine/model/attention.h"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace xmc {
namespace bert_detail {
namespace {

constexpr double kInitStd = 0.02;  // Hugging Face initializer_range

torch::nn::Linear make_linear(torch::nn::Module& parent, const std::string& name, std::int64_t in, std::int64_t out) {
  auto linear = parent.register_module(name, torch::nn::Linear(in, out));
  torch::NoGradGuard no_grad;
  linear->weight.normal_(0.0, kInitStd);
  linear->bias.zero_();
  return linear;
}

torch::nn::LayerNorm make_layer_norm(torch::nn::Module& parent, std::int64_t size, double eps) {
  return parent.register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({size}).eps(eps).elementwise_affine(true)));
}

/// A named, parameterless container, so that parameter names nest like Hugging Face's.
std::shared_ptr<torch::nn::Module> make_container(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

/// The most negative value of `dtype`, added to the scores of padding keys.
double large_negative(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kHalf: return -65504.0;
    case torch::kBFloat16: return -3.38e38;
    case torch::kDouble: return std::numeric_limits<double>::lowest();
    default: return static_cast<double>(std::numeric_limits<float>::lowest());
  }
}

}  // namespace

/// word + position (+ token type 0) embeddings -> LayerNorm -> dropout.
class EmbeddingsImpl : public torch::nn::Module {
 public:
  EmbeddingsImpl(const BertConfig& config, double dropout) {
    const std::int64_t hidden = config.hidden_size;
    word_ = register_module("word_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(config.vocab_size, hidden)
                                                                         .padding_idx(config.pad_token_id)));
    position_ = register_module("position_embeddings", torch::nn::Embedding(config.max_position_embeddings, hidden));
    if (config.family == BertFamily::bert && config.type_vocab_size > 0)
      token_type_ = register_module("token_type_embeddings", torch::nn::Embedding(config.type_vocab_size, hidden));
    layer_norm_ = make_layer_norm(*this, hidden, config.layer_norm_eps);
    dropout_ = register_module("dropout", Dropout(dropout));

    torch::NoGradGuard no_grad;
    for (torch::nn::Embedding* embedding : {&word_, &position_, &token_type_})
      if (!embedding->is_empty()) (*embedding)->weight.normal_(0.0, kInitStd);
    word_->weight[config.pad_token_id].zero_();
  }

  /// `images` with `projection` (early fusion): projected images take the word embeddings' place at their
  /// positions, and get the position and token-type embeddings and the LayerNorm as words do.
  torch::Tensor forward(const torch::Tensor& input_ids, const BatchImages* images = nullptr, ImageProjectionImpl* projection = nullptr) {
    const auto positions = torch::arange(input_ids.size(1), input_ids.options().dtype(torch::kLong));
    torch::Tensor x = word_(input_ids);
    if (images != nullptr && projection != nullptr) x = place_image_tokens(x, *images, *projection);
    if (!token_type_.is_empty()) x = x + token_type_->weight[0];  // token_type_ids are all 0
    x = x + position_(positions).unsqueeze(0);
    return dropout_(layer_norm_(x));
  }

  const torch::Tensor& word_weight() const { return word_->weight; }

 private:
  torch::nn::Embedding word_{nullptr}, position_{nullptr}, token_type_{nullptr};
  torch::nn::LayerNorm layer_norm_{nullptr};
  Dropout dropout_{nullptr};
};

/// One post-LayerNorm transformer layer, parameters named as Hugging Face's BertLayer.
class LayerImpl : public torch::nn::Module {
 public:
  LayerImpl(const BertConfig& config, double hidden_dropout, double attention_dropout)
      : num_heads_(config.num_heads), activation_(config.activation), attention_dropout_p_(attention_dropout) {
    const std::int64_t hidden = config.hidden_size;
    auto attention = make_container(*this, "attention");
    auto self = make_container(*attention, "self");
    query_ = make_linear(*self, "query", hidden, hidden);
    key_ = make_linear(*self, "key", hidden, hidden);
    value_ = make_linear(*self, "value", hidden, hidden);
    auto attention_output = make_container(*attention, "output");
    attention_dense_ = make_linear(*attention_output, "dense", hidden, hidden);
    attention_norm_ = make_layer_norm(*attention_output, hidden, config.layer_norm_eps);
    auto intermediate = make_container(*this, "intermediate");
    intermediate_dense_ = make_linear(*intermediate, "dense", hidden, config.intermediate_size);
    auto output = make_container(*this, "output");
    output_dense_ = make_linear(*output, "dense", config.intermediate_size, hidden);
    output_norm_ = make_layer_norm(*output, hidden, config.layer_norm_eps);
    hidden_dropout_ = register_module("hidden_dropout", Dropout(hidden_dropout));
  }

  /// x [B, L, H]; additive_mask [B, 1, 1, L] (0 for real keys, very negative for padding).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& additive_mask) {
    const std::int64_t batch = x.size(0), length = x.size(1), hidden = x.size(2);
    const std::int64_t head_dim = hidden / num_heads_;
    auto split_heads = [&](const torch::Tensor& t) {
      return t.view({batch, length, num_heads_, head_dim}).transpose(1, 2);  // [B, heads, L, head_dim]
    };
    const auto [q_rows, k_rows, v_rows] = project_qkv(x);
    const torch::Tensor q = split_heads(q_rows);
    const torch::Tensor k = split_heads(k_rows);
    const torch::Tensor v = split_heads(v_rows);
    const torch::Tensor mask = additive_mask.to(q.scalar_type());
    const torch::Tensor context = scaled_dot_product_attention(q, k, v, mask, is_training() ? attention_dropout_p_ : 0.0);
    return feed_forward(x, context.transpose(1, 2).reshape({batch, length, hidden}));
  }

  /// The same layer over packed tokens: x [T, H], the real tokens of a [batch, length] batch at flat positions `rows`
  /// [T]. Only the attention sees the padded layout (its q, k, v scattered into zeros): a padded key is masked out,
  /// a padded query's output dropped, so each real token's result is forward()'s.
  torch::Tensor forward_packed(const torch::Tensor& x, const torch::Tensor& rows, std::int64_t batch, std::int64_t length,
                               const torch::Tensor& additive_mask) {
    const std::int64_t hidden = x.size(1);
    const std::int64_t head_dim = hidden / num_heads_;
    auto padded_heads = [&](const torch::Tensor& t) {  // [T, H] -> [B, heads, L, head_dim]
      return torch::zeros({batch * length, hidden}, t.options()).index_copy(0, rows, t).view({batch, length, num_heads_, head_dim}).transpose(1, 2);
    };
    const auto [q_rows, k_rows, v_rows] = project_qkv(x);
    const torch::Tensor q = padded_heads(q_rows);
    const torch::Tensor k = padded_heads(k_rows);
    const torch::Tensor v = padded_heads(v_rows);
    const torch::Tensor mask = additive_mask.to(q.scalar_type());
    const torch::Tensor context = scaled_dot_product_attention(q, k, v, mask, is_training() ? attention_dropout_p_ : 0.0);
    return feed_forward(x, context.transpose(1, 2).reshape({batch * length, hidden}).index_select(0, rows));
  }

 private:
  /// q, k and v of `x` (any leading shape) as one product against the three projections' weights side by side
  /// ([3H, H]): one wide GEMM instead of three narrow ones reading x three times (on a GPU, one launch and one read
  /// of the activations in backward instead of three summed). The parameters stay Hugging Face's three linears.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> project_qkv(const torch::Tensor& x) {
    const torch::Tensor weight = torch::cat({query_->weight, key_->weight, value_->weight});
    const torch::Tensor bias = torch::cat({query_->bias, key_->bias, value_->bias});
    const std::vector<torch::Tensor> parts = torch::nn::functional::linear(x, weight, bias).chunk(3, -1);
    return {parts[0], parts[1], parts[2]};
  }

  /// The attention output's projection and residual norm, then the MLP and its residual norm (any leading shape).
  torch::Tensor feed_forward(const torch::Tensor& x, const torch::Tensor& merged) {
    const torch::Tensor attended = attention_norm_(x + hidden_dropout_(attention_dense_(merged)));

    torch::Tensor inner = intermediate_dense_(attended);
    switch (activation_) {
      case BertActivation::gelu: inner = torch::gelu(inner); break;
      case BertActivation::gelu_tanh: inner = torch::gelu(inner, "tanh"); break;
      case BertActivation::relu: inner = torch::relu(inner); break;
    }
    return output_norm_(attended + hidden_dropout_(output_dense_(inner)));
  }

  std::int64_t num_heads_;
  BertActivation activation_;
  double attention_dropout_p_;
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr}, attention_dense_{nullptr};
  torch::nn::Linear intermediate_dense_{nullptr}, output_dense_{nullptr};
  torch::nn::LayerNorm attention_norm_{nullptr}, output_norm_{nullptr};
  Dropout hidden_dropout_{nullptr};
};

namespace {

// ---- names: our parameters carry Hugging Face BertModel names; DistilBertModel names map onto them ----

/// `canonical` (a BertModel name) as a DistilBertModel name.
std::string distilbert_name(const std::string& canonical) {
  static const std::vector<std::pair<std::string, std::string>> kLayerParts{
      {"attention.self.query.", "attention.q_lin."},      {"attention.self.key.", "attention.k_lin."},
      {"attention.self.value.", "attention.v_lin."},      {"attention.output.dense.", "attention.out_lin."},
      {"attention.output.LayerNorm.", "sa_layer_norm."},  {"intermediate.dense.", "ffn.lin1."},
      {"output.dense.", "ffn.lin2."},                     {"output.LayerNorm.", "output_layer_norm."},
  };
  const std::string layer_prefix = "encoder.layer.";
  if (canonical.rfind(layer_prefix, 0) != 0) return canonical;  // embeddings.* are named alike
  const std::size_t dot = canonical.find('.', layer_prefix.size());
  const std::string index = canonical.substr(layer_prefix.size(), dot - layer_prefix.size());
  const std::string rest = canonical.substr(dot + 1);
  for (const auto& [bert_part, distil_part] : kLayerParts)
    if (rest.rfind(bert_part, 0) == 0)
      return "transformer.layer." + index + "." + distil_part + rest.substr(bert_part.size());
  return canonical;
}

/// The checkpoint name of `canonical` for `family`, without a model prefix.
std::string checkpoint_name(BertFamily family, const std::string& canonical) {
  return family == BertFamily::distilbert ? distilbert_name(canonical) : canonical;
}

/// Names `canonical` may carry in a checkpoint, the plain one first.
std::vector<std::string> candidate_names(BertFamily family, const std::string& canonical) {
  const std::string plain = checkpoint_name(family, canonical);
  std::vector<std::string> bases{plain};
  const bool is_norm = plain.find("LayerNorm.") != std::string::npos || plain.find("layer_norm.") != std::string::npos;
  if (is_norm) {  // old TensorFlow-converted checkpoints: gamma / beta
    const std::size_t dot = plain.rfind('.');
    const std::string leaf = plain.substr(dot + 1);
    if (leaf == "weight") bases.push_back(plain.substr(0, dot + 1) + "gamma");
    if (leaf == "bias") bases.push_back(plain.substr(0, dot + 1) + "beta");
  }
  const std::string prefix = family == BertFamily::distilbert ? "distilbert." : "bert.";
  std::vector<std::string> names = bases;
  for (const auto& base : bases) names.push_back(prefix + base);
  return names;
}

std::vector<std::int64_t> shape_of(const torch::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

// ---- config.json ----


BertActivation parse_activation(const HfConfigReader& reader, const std::string& key, const std::string& source) {
  const std::string name = reader.optional_string(key, "gelu");
  if (name == "gelu") return BertActivation::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return BertActivation::gelu_tanh;
  if (name == "relu") return BertActivation::relu;
  throw ConfigError(source + ": key '" + key + "' names an unsupported activation '" + name +
                    "' (supported: gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

std::string activation_name(BertActivation activation) {
  switch (activation) {
    case BertActivation::gelu: return "gelu";
    case BertActivation::gelu_tanh: return "gelu_new";
    case BertActivation::relu: return "relu";
  }
  return "gelu";
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  AtomicFileWriter writer(path);
  writer.stream() << text;
  writer.commit();
}

}  // namespace
}  // namespace bert_detail

// ---- BertConfig ----

void BertConfig::validate(const std::string& source) const {
  auto positive = [&](std::int64_t value, const char* key) {
    if (value <= 0) throw ConfigError(source + ": key '" + key + "' must be positive, got " + std::to_string(value));
  };
  const bool distil = family == BertFamily::distilbert;
  positive(vocab_size, "vocab_size");
  positive(hidden_size, distil ? "dim" : "hidden_size");
  positive(num_layers, distil ? "n_layers" : "num_hidden_layers");
  positive(num_heads, distil ? "n_heads" : "num_attention_heads");
  positive(intermediate_size, distil ? "hidden_dim" : "intermediate_size");
  positive(max_position_embeddings, "max_position_embeddings");
  if (!distil) positive(type_vocab_size, "type_vocab_size");
  if (hidden_size % num_heads != 0)
    throw ConfigError(source + ": " + (distil ? "dim " : "hidden_size ") + std::to_string(hidden_size) +
                      " is not a multiple of " + (distil ? "n_heads " : "num_attention_heads ") +
                      std::to_string(num_heads));
  if (pad_token_id < 0 || pad_token_id >= vocab_size)
    throw ConfigError(source + ": key 'pad_token_id' " + std::to_string(pad_token_id) + " is outside the vocabulary");
  // The sizes against the machine before anything is allocated: a typo in hidden_size must not reach the allocator
  // ("you tried to allocate 219902325555200 bytes").
  const double h = static_cast<double>(hidden_size), ffn = static_cast<double>(intermediate_size);
  const double parameters = (static_cast<double>(vocab_size) + static_cast<double>(max_position_embeddings) +
                             static_cast<double>(distil ? 0 : type_vocab_size)) * h +
                            static_cast<double>(num_layers) * (4 * h * h + 2 * h * ffn + 9 * h + ffn);
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (memory > 0 && 4 * parameters > memory) {
    char text[256];
    std::snprintf(text, sizeof text, "a model of these sizes has %.3g parameters, %.1f GiB in float32: more than this machine's %.1f GiB",
                  parameters, 4 * parameters / kGiB, memory / kGiB);
    throw ConfigError(source + ": " + (distil ? "dim " : "hidden_size ") + std::to_string(hidden_size) + ", " +
                      (distil ? "n_layers " : "num_hidden_layers ") + std::to_string(num_layers) + ", vocab_size " + std::to_string(vocab_size) +
                      ", " + (distil ? "hidden_dim " : "intermediate_size ") + std::to_string(intermediate_size) + ": " + text);
  }
  if (!(layer_norm_eps > 0.0)) throw ConfigError(source + ": key 'layer_norm_eps' must be positive");
  for (const auto& [value, key] : {std::pair{hidden_dropout, distil ? "dropout" : "hidden_dropout_prob"},
                                   std::pair{attention_dropout, distil ? "attention_dropout" : "attention_probs_dropout_prob"}})
    if (!(value >= 0.0 && value < 1.0))
      throw ConfigError(source + ": key '" + key + "' must be in [0, 1), got " + std::to_string(value));
}

BertConfig parse_bert_config(const std::string& json_text, const std::string& source) {
  const nlohmann::json json = parse_hf_config_object(json_text, source);
  const HfConfigReader reader(json, source);

  BertConfig config;
  if (reader.has("model_type")) {
    const std::string type = reader.optional_string("model_type", "bert");
    if (type == "bert") config.family = BertFamily::bert;
    else if (type == "distilbert") config.family = BertFamily::distilbert;
    else
      throw ConfigError(source + ": key 'model_type' is '" + type + "'; supported: bert (also MiniLM), distilbert");
  } else {
    config.family = reader.has("n_layers") || reader.has("dim") ? BertFamily::distilbert : BertFamily::bert;
  }

  config.vocab_size = reader.required_int("vocab_size");
  config.max_position_embeddings = reader.required_int("max_position_embeddings");
  config.pad_token_id = reader.optional_int("pad_token_id", 0);
  if (config.family == BertFamily::bert) {
    config.hidden_size = reader.required_int("hidden_size");
    config.num_layers = reader.required_int("num_hidden_layers");
    config.num_heads = reader.required_int("num_attention_heads");
    config.intermediate_size = reader.required_int("intermediate_size");
    config.type_vocab_size = reader.optional_int("type_vocab_size", 2);
    config.layer_norm_eps = reader.optional_double("layer_norm_eps", 1e-12);
    config.activation = bert_detail::parse_activation(reader, "hidden_act", source);
    config.hidden_dropout = reader.optional_double("hidden_dropout_prob", 0.1);
    config.attention_dropout = reader.optional_double("attention_probs_dropout_prob", 0.1);
    const std::string positions = reader.optional_string("position_embedding_type", "absolute");
    if (positions != "absolute")
      throw ConfigError(source + ": key 'position_embedding_type' is '" + positions + "'; only 'absolute' is supported");
  } else {
    config.hidden_size = reader.required_int("dim");
    config.num_layers = reader.required_int("n_layers");
    config.num_heads = reader.required_int("n_heads");
    config.intermediate_size = reader.required_int("hidden_dim");
    config.type_vocab_size = 0;
    config.layer_norm_eps = 1e-12;  // fixed in DistilBERT
    config.activation = bert_detail::parse_activation(reader, "activation", source);
    config.hidden_dropout = reader.optional_double("dropout", 0.1);
    config.attention_dropout = reader.optional_double("attention_dropout", 0.1);
  }
  config.validate(source);
  return config;
}

BertConfig read_bert_config(const std::filesystem::path& file) {
  return parse_bert_config(read_hf_config_text(file), file.string());
}

std::string bert_config_to_json(const BertConfig& config) {
  nlohmann::ordered_json json;
  if (config.family == BertFamily::bert) {
    json = {{"architectures", {"BertModel"}},
            {"model_type", "bert"},
            {"vocab_size", config.vocab_size},
            {"hidden_size", config.hidden_size},
            {"num_hidden_layers", config.num_layers},
            {"num_attention_heads", config.num_heads},
            {"intermediate_size", config.intermediate_size},
            {"max_position_embeddings", config.max_position_embeddings},
            {"type_vocab_size", config.type_vocab_size},
            {"pad_token_id", config.pad_token_id},
            {"layer_norm_eps", config.layer_norm_eps},
            {"hidden_act", bert_detail::activation_name(config.activation)},
            {"hidden_dropout_prob", config.hidden_dropout},
            {"attention_probs_dropout_prob", config.attention_dropout},
            {"position_embedding_type", "absolute"},
            {"initializer_range", bert_detail::kInitStd}};
  } else {
    json = {{"architectures", {"DistilBertModel"}},
            {"model_type", "distilbert"},
            {"vocab_size", config.vocab_size},
            {"dim", config.hidden_size},
            {"n_layers", config.num_layers},
            {"n_heads", config.num_heads},
            {"hidden_dim", config.intermediate_size},
            {"max_position_embeddings", config.max_position_embeddings},
            {"pad_token_id", config.pad_token_id},
            {"activation", bert_detail::activation_name(config.activation)},
            {"dropout", config.hidden_dropout},
            {"attention_dropout", config.attention_dropout},
            {"sinusoidal_pos_embds", false},
            {"initializer_range", bert_detail::kInitStd}};
  }
  return json.dump(2) + "\n";
}

// ---- BertEncoderImpl ----

BertEncoderImpl::BertEncoderImpl(const BertConfig& config, const BertEncoderOptions& options)
    : config_(config), options_(options) {
  config_.validate("bert config");
  if (options_.max_len < 2)
    throw ConfigError("bert encoder: max_len " + std::to_string(options_.max_len) + " must be at least 2 ([CLS] and [SEP])");
  options_.max_len = std::min(options_.max_len, config_.max_position_embeddings);
  if (options_.dropout && !(*options_.dropout >= 0.0 && *options_.dropout < 1.0))
    throw ConfigError("bert encoder: dropout " + std::to_string(*options_.dropout) + " must be in [0, 1)");
  const double hidden_dropout = options_.dropout.value_or(config_.hidden_dropout);
  const double attention_dropout = options_.dropout.value_or(config_.attention_dropout);

  embeddings_ = register_module("embeddings", std::make_shared<bert_detail::EmbeddingsImpl>(config_, hidden_dropout));
  auto encoder = bert_detail::make_container(*this, "encoder");
  torch::nn::ModuleList layer_list;
  for (std::int64_t i = 0; i < config_.num_layers; ++i) {
    layers_.push_back(std::make_shared<bert_detail::LayerImpl>(config_, hidden_dropout, attention_dropout));
    layer_list->push_back(layers_.back());
  }
  encoder->register_module("layer", layer_list);
  to(options_.device);
}

torch::Device BertEncoderImpl::device() const { return embeddings_->word_weight().device(); }

void BertEncoderImpl::attach_images(const ImageFusionOptions& options) {
  if (image_projection_) throw ConfigError("bert encoder: images are already fused");
  if (options.max_images <= 0) return;
  if (options.image_dim < 1) throw ConfigError("bert encoder: an image projection needs the bank's embedding size, got " + std::to_string(options.image_dim));
  if (options.kind == ImageFusionKind::early && options_.max_len + options.max_images > config_.max_position_embeddings)
    throw ConfigError("images.max: " + std::to_string(options_.max_len) + " text tokens and " + std::to_string(options.max_images) +
                      " image tokens exceed the model's max_position_embeddings " + std::to_string(config_.max_position_embeddings) +
                      "; lower encoder.max_len");
  image_fusion_ = options;
  image_projection_ = register_module("image_projection", ImageProjection(options.image_dim, config_.hidden_size, device()));
}

BertBatch BertEncoderImpl::make_batch(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) const {
  const auto batch = static_cast<std::int64_t>(rows.size());
  for (const std::int64_t row : rows)
    if (row < 0 || row >= corpus.size())
      throw ConfigError("bert encoder: row " + std::to_string(row) + " is outside the corpus (" +
                        std::to_string(corpus.size()) + " texts)");
  BertBatch prepared;
  prepared.images = gather_batch_images(corpus, rows, image_fusion_.max_images, image_fusion_.image_dim);
  const bool early = image_fusion_.kind == ImageFusionKind::early;
  std::int64_t length = 1;
  for (std::size_t b = 0; b < rows.size(); ++b)
    length = std::max(length, std::min<std::int64_t>(static_cast<std::int64_t>(corpus.tokens(rows[b]).size()), options_.max_len) +
                                  (early ? prepared.images.per_row[b] : 0));
  torch::Tensor ids = torch::full({batch, length}, config_.pad_token_id, torch::kLong);
  torch::Tensor mask = torch::zeros({batch, length}, torch::kBool);
  std::int64_t* ids_data = ids.data_ptr<std::int64_t>();
  bool* mask_data = mask.data_ptr<bool>();
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto tokens = corpus.tokens(rows[static_cast<std::size_t>(b)]);
    const auto size = static_cast<std::int64_t>(tokens.size());
    const std::int64_t kept = std::min(size, options_.max_len);
    for (std::int64_t i = 0; i < kept; ++i) {
      // Too long: the first max_len − 1 tokens, then the last one ([SEP]).
      const std::int32_t id = (i == kept - 1 && kept < size) ? tokens.back() : tokens[static_cast<std::size_t>(i)];
      if (id < 0 || id >= config_.vocab_size)
        throw ConfigError("bert encoder: token id " + std::to_string(id) + " of text " +
                          std::to_string(rows[static_cast<std::size_t>(b)]) + " is outside the vocabulary (vocab_size " +
                          std::to_string(config_.vocab_size) + "); was the corpus tokenized with this model's vocab?");
      ids_data[b * length + i] = id;
      mask_data[b * length + i] = true;
    }
    if (early)  // the row's images right after its [SEP]: positions continue, the mask covers them
      for (std::int64_t i = 0; i < prepared.images.per_row[static_cast<std::size_t>(b)]; ++i) mask_data[b * length + kept + i] = true;
  }
  const torch::Device target = device();
  if (!prepared.images.empty()) {
    torch::Tensor positions = torch::empty({prepared.images.rows.size(0)}, torch::kLong);
    std::int64_t* at = positions.data_ptr<std::int64_t>();
    std::int64_t n = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t text = std::min<std::int64_t>(static_cast<std::int64_t>(corpus.tokens(rows[static_cast<std::size_t>(b)]).size()), options_.max_len);
      for (std::int64_t i = 0; i < prepared.images.per_row[static_cast<std::size_t>(b)]; ++i) at[n++] = text + i;
    }
    stage_batch_images(prepared.images, positions, target);
  }
  prepared.input_ids = staged_to(ids, target);
  prepared.attention_mask = staged_to(mask, target);
  prepared.token_rows = staged_to(mask.reshape({-1}).nonzero().squeeze(1), target);
  return prepared;
}

namespace {

/// Checks a batch's shapes for forward() or forward_packed() (`who`), naming what is wrong.
void check_batch(const char* who, const torch::Tensor& input_ids, const torch::Tensor& attention_mask, std::int64_t max_positions) {
  TORCH_CHECK(input_ids.dim() == 2 && attention_mask.sizes() == input_ids.sizes(), "BertEncoder::", who,
              ": input_ids and attention_mask must both be [B, L]");
  TORCH_CHECK(input_ids.size(1) <= max_positions, "BertEncoder::", who, ": sequence length ", input_ids.size(1),
              " exceeds max_position_embeddings ", max_positions);
}

/// attention_mask [B, L] as the scores' additive mask [B, 1, 1, L] in `like`'s type and device: 0 for real keys, the
/// type's most negative value for padding.
torch::Tensor additive_padding_mask(const torch::Tensor& attention_mask, const torch::Tensor& like) {
  const torch::Tensor keep = attention_mask.to(torch::kBool).view({attention_mask.size(0), 1, 1, attention_mask.size(1)});
  return torch::zeros(keep.sizes(), like.options()).masked_fill(keep.logical_not(), bert_detail::large_negative(like.scalar_type()));
}

}  // namespace

torch::Tensor BertEncoderImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, const BatchImages* images) {
  check_batch("forward", input_ids, attention_mask, config_.max_position_embeddings);
  torch::Tensor x = embeddings_->forward(input_ids, image_projection_ ? images : nullptr, image_projection_ ? image_projection_.get() : nullptr);
  const torch::Tensor additive_mask = additive_padding_mask(attention_mask, x);
  for (const auto& layer : layers_) x = layer->forward(x, additive_mask);
  return x;
}

torch::Tensor BertEncoderImpl::forward_packed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, const torch::Tensor& token_rows,
                                             const BatchImages* images) {
  check_batch("forward_packed", input_ids, attention_mask, config_.max_position_embeddings);
  const std::int64_t batch = input_ids.size(0), length = input_ids.size(1), hidden = config_.hidden_size;
  const torch::Tensor rows = token_rows.defined() ? token_rows : attention_mask.reshape({-1}).nonzero().squeeze(1);
  // Embeddings on the padded layout (a lookup: positions come from it), then only the real tokens go on.
  const torch::Tensor embedded = embeddings_->forward(input_ids, image_projection_ ? images : nullptr, image_projection_ ? image_projection_.get() : nullptr);
  torch::Tensor x = embedded.reshape({batch * length, hidden}).index_select(0, rows);
  const torch::Tensor additive_mask = additive_padding_mask(attention_mask, x);
  for (const auto& layer : layers_) x = layer->forward_packed(x, rows, batch, length, additive_mask);
  return torch::zeros({batch * length, hidden}, x.options()).index_copy(0, rows, x).view({batch, length, hidden});
}

bool BertEncoderImpl::packs(std::int64_t real_tokens, std::int64_t positions) const {
  switch (options_.packing) {
    case BertPacking::on: return true;
    case BertPacking::off: return false;
    case BertPacking::automatic: break;
  }
  // On a CPU (measured: a 6 x 768 step on titles of 19 tokens in 32 took 0.70x the padded step's time). Not yet on a GPU,
  // where its gathers add launches to a step that is launch-bound and no loan has measured it.
  if (!device().is_cpu()) return false;
  return 10 * (positions - real_tokens) >= positions;  // a tenth or more of the positions are padding
}

torch::Tensor BertEncoderImpl::pool(const torch::Tensor& hidden, const torch::Tensor& attention_mask) const {
  if (options_.pooling == BertPooling::cls) return hidden.select(1, 0);
  const torch::Tensor weights = attention_mask.to(hidden.scalar_type()).unsqueeze(-1);  // [B, L, 1]
  return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1e-9);
}

std::shared_ptr<const EncoderInput> BertEncoderImpl::prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                                   bool /*for_training*/) const {
  if (rows.empty()) return std::make_shared<BertBatch>();
  return std::make_shared<BertBatch>(make_batch(corpus, rows));
}

std::shared_ptr<const EncoderInput> BertEncoderImpl::join_inputs(const EncoderInput& first, const EncoderInput& second) const {
  const auto& a = dynamic_cast<const BertBatch&>(first);
  const auto& b = dynamic_cast<const BertBatch&>(second);
  if (!a.input_ids.defined() || !b.input_ids.defined() || !a.images.empty() || !b.images.empty()) return nullptr;
  const std::int64_t length = std::max(a.input_ids.size(1), b.input_ids.size(1));
  const std::int64_t separate = a.input_ids.numel() + b.input_ids.numel();
  const std::int64_t joined = (a.input_ids.size(0) + b.input_ids.size(0)) * length;
  if (4 * joined > 5 * separate) return nullptr;
  auto widened = [&](const torch::Tensor& t, std::int64_t fill) {
    return t.size(1) == length ? t : torch::constant_pad_nd(t, {0, length - t.size(1)}, fill);
  };
  auto batch = std::make_shared<BertBatch>();
  batch->input_ids = torch::cat({widened(a.input_ids, config_.pad_token_id), widened(b.input_ids, config_.pad_token_id)});
  batch->attention_mask = torch::cat({widened(a.attention_mask, 0), widened(b.attention_mask, 0)});
  if (a.token_rows.defined() && b.token_rows.defined()) {
    // Each part's flat positions b * L_part + i, moved to the joined layout's b * length + i (b's rows after a's).
    auto relaid = [&](const torch::Tensor& rows, std::int64_t part_length, std::int64_t first_row) {
      return (torch::div(rows, part_length, "floor") + first_row) * length + torch::remainder(rows, part_length);
    };
    batch->token_rows = torch::cat({relaid(a.token_rows, a.input_ids.size(1), 0), relaid(b.token_rows, b.input_ids.size(1), a.input_ids.size(0))});
  }
  return batch;
}

torch::Tensor BertEncoderImpl::encode_input(const EncoderInput& input) {
  const auto& batch = dynamic_cast<const BertBatch&>(input);
  if (!batch.input_ids.defined()) return torch::empty({0, config_.hidden_size}, torch::TensorOptions().device(device()));
  const AutocastScope mixed_precision(device(), options_.autocast);
  const bool early = image_fusion_.kind == ImageFusionKind::early;
  const BatchImages* fused = early ? &batch.images : nullptr;
  // The real tokens' count comes with a batch made on the host (no device synchronisation to choose).
  const std::int64_t real_tokens = batch.token_rows.defined() ? batch.token_rows.size(0) : -1;
  const bool packed = real_tokens >= 0 ? packs(real_tokens, batch.input_ids.numel()) : options_.packing == BertPacking::on;
  torch::Tensor pooled = pool(packed ? forward_packed(batch.input_ids, batch.attention_mask, batch.token_rows, fused)
                                     : forward(batch.input_ids, batch.attention_mask, fused),
                              batch.attention_mask);
  if (image_projection_ && !early) pooled = add_pooled_images(pooled, batch.images, *image_projection_);
  return pooled.to(torch::kFloat);
}

// ---- loading and saving ----

BertEncoder load_bert_encoder(const std::filesystem::path& folder, const BertEncoderOptions& options) {
  const BertConfig config = read_bert_config(folder / "config.json");
  const std::filesystem::path weights_path = folder / "model.safetensors";
  if (!std::filesystem::exists(weights_path)) {
    const bool has_bin = std::filesystem::exists(folder / "pytorch_model.bin");
    throw InputError(weights_path.string(), has_bin ? "missing; only safetensors weights are read (convert "
                                                      "pytorch_model.bin with transformers' save_pretrained(..., "
                                                      "safe_serialization=True))"
                                                    : "missing (a Hugging Face model folder needs model.safetensors)");
  }
  const SafetensorsFile weights = SafetensorsFile::open(weights_path);
  const std::string config_file = (folder / "config.json").string();

  BertEncoder encoder(config, options);
  torch::NoGradGuard no_grad;
  for (auto& item : encoder->named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    torch::Tensor& parameter = item.value();
    const TensorInfo* info = nullptr;
    for (const std::string& candidate : bert_detail::candidate_names(config.family, name))
      if ((info = weights.find(candidate)) != nullptr) break;
    const std::string expected_name = bert_detail::checkpoint_name(config.family, name);
    if (info == nullptr)
      throw InputError(weights_path.string(), "tensor '" + expected_name + "' (shape " +
                                                  format_shape(bert_detail::shape_of(parameter)) +
                                                  ") is missing");
    const auto expected_shape = bert_detail::shape_of(parameter);
    if (info->shape != expected_shape)
      throw InputError(weights_path.string(), "tensor '" + info->name + "' has shape " + format_shape(info->shape) +
                                                  " but " + config_file + " needs " + format_shape(expected_shape));
    parameter.copy_(safetensors_tensor(weights, *info));
  }
  return encoder;
}

void save_bert_encoder(const BertEncoder& encoder, const BertConfig& config, const std::filesystem::path& folder) {
  const BertConfig& own = encoder->config();
  if (config.family != own.family || config.vocab_size != own.vocab_size || config.hidden_size != own.hidden_size ||
      config.num_layers != own.num_layers || config.num_heads != own.num_heads ||
      config.intermediate_size != own.intermediate_size ||
      config.max_position_embeddings != own.max_position_embeddings ||
      (config.family == BertFamily::bert && config.type_vocab_size != own.type_vocab_size) ||
      config.activation != own.activation || config.layer_norm_eps != own.layer_norm_eps ||
      config.pad_token_id != own.pad_token_id)
    throw ConfigError("save_bert_encoder: the config does not describe the encoder's architecture");

  std::filesystem::create_directories(folder);
  std::vector<torch::Tensor> keep_alive;
  std::vector<TensorToWrite> tensors;
  for (const auto& item : encoder->named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    if (name.rfind("image_projection.", 0) == 0) continue;  // not part of the text model
    keep_alive.push_back(item.value().detach().to(torch::kCPU, torch::kFloat).contiguous());
    const torch::Tensor& t = keep_alive.back();
    tensors.push_back({bert_detail::checkpoint_name(config.family, name), SafeDtype::F32, bert_detail::shape_of(t),
                       {static_cast<const std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.nbytes())}});
  }
  write_safetensors(folder / "model.safetensors", tensors, {{"format", "pt"}});
  bert_detail::write_text_file(folder / "config.json", bert_config_to_json(config));
}

}  // namespace xmc
