#include "engine/model/decoder/decoder_config.h"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/model/hf_config_reader.h"

namespace xmc {

std::string DecoderConfig::model_type() const {
  switch (family) {
    case DecoderFamily::qwen2: return "qwen2";
    case DecoderFamily::qwen3: return "qwen3";
    case DecoderFamily::llama: return "llama";
  }
  return "qwen2";
}

double DecoderConfig::parameter_count() const {
  const double h = static_cast<double>(hidden_size), ffn = static_cast<double>(intermediate_size);
  const double q = static_cast<double>(num_heads * head_dim), kv = static_cast<double>(num_kv_heads * head_dim);
  const double attention = h * q + 2 * h * kv + q * h + (qkv_bias ? q + 2 * kv : 0) + (o_bias ? h : 0) +
                           (qk_norm ? 2 * static_cast<double>(head_dim) : 0);
  const double mlp = 3 * h * ffn + (mlp_bias ? 2 * ffn + h : 0);
  return static_cast<double>(vocab_size) * h + static_cast<double>(num_layers) * (attention + mlp + 2 * h) + h;
}

void DecoderConfig::validate(const std::string& source, double bytes_per_weight) const {
  auto positive = [&](std::int64_t value, const char* key) {
    if (value <= 0) throw ConfigError(source + ": key '" + key + "' must be positive, got " + std::to_string(value));
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(num_layers, "num_hidden_layers");
  positive(num_heads, "num_attention_heads");
  positive(num_kv_heads, "num_key_value_heads");
  positive(head_dim, "head_dim");
  positive(max_position_embeddings, "max_position_embeddings");
  if (num_heads % num_kv_heads != 0)
    throw ConfigError(source + ": num_attention_heads " + std::to_string(num_heads) + " is not a multiple of num_key_value_heads " +
                      std::to_string(num_kv_heads));
  if (head_dim % 2 != 0) throw ConfigError(source + ": head_dim " + std::to_string(head_dim) + " must be even (rotary positions rotate pairs)");
  if (!(rms_norm_eps > 0.0)) throw ConfigError(source + ": key 'rms_norm_eps' must be positive");
  if (!(rope_theta > 1.0)) throw ConfigError(source + ": key 'rope_theta' must be greater than 1");
  if (eos_token_id && (*eos_token_id < 0 || *eos_token_id >= vocab_size))
    throw ConfigError(source + ": key 'eos_token_id' " + std::to_string(*eos_token_id) + " is outside the vocabulary (vocab_size " +
                      std::to_string(vocab_size) + ")");
  // Sizes against the machine before anything is allocated: a typo in hidden_size must not reach the allocator.
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double bytes = bytes_per_weight * parameter_count();
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (memory > 0 && bytes > memory) {
    char text[256];
    std::snprintf(text, sizeof text, "a model of these sizes has %.3g parameters, %.1f GiB: more than this machine's %.1f GiB",
                  parameter_count(), bytes / kGiB, memory / kGiB);
    throw ConfigError(source + ": hidden_size " + std::to_string(hidden_size) + ", num_hidden_layers " + std::to_string(num_layers) +
                      ", vocab_size " + std::to_string(vocab_size) + ", intermediate_size " + std::to_string(intermediate_size) + ": " + text);
  }
}

DecoderConfig parse_decoder_config(const std::string& json_text, const std::string& source) {
  const nlohmann::json json = parse_hf_config_object(json_text, source);
  const HfConfigReader reader(json, source);

  DecoderConfig config;
  if (!reader.has("model_type")) throw ConfigError(source + ": missing key 'model_type' (qwen2, qwen3 or llama)");
  const std::string type = reader.optional_string("model_type", "");
  if (type == "qwen2") config.family = DecoderFamily::qwen2;
  else if (type == "qwen3") config.family = DecoderFamily::qwen3;
  else if (type == "llama") config.family = DecoderFamily::llama;
  else throw ConfigError(source + ": key 'model_type' is '" + type + "'; a decoder encoder reads qwen2, qwen3 or llama");

  config.vocab_size = reader.required_int("vocab_size");
  config.hidden_size = reader.required_int("hidden_size");
  config.intermediate_size = reader.required_int("intermediate_size");
  config.num_layers = reader.required_int("num_hidden_layers");
  config.num_heads = reader.required_int("num_attention_heads");
  config.num_kv_heads = reader.optional_int("num_key_value_heads", config.num_heads);
  if (config.num_heads > 0) config.head_dim = reader.optional_int("head_dim", config.hidden_size / config.num_heads);
  if (!reader.has("head_dim") && config.num_heads > 0 && config.hidden_size % config.num_heads != 0)
    throw ConfigError(source + ": hidden_size " + std::to_string(config.hidden_size) + " is not a multiple of num_attention_heads " +
                      std::to_string(config.num_heads) + " and no head_dim is given");
  config.max_position_embeddings = reader.optional_int("max_position_embeddings", 32768);
  config.rms_norm_eps = reader.optional_double("rms_norm_eps", 1e-6);
  config.rope_theta = reader.optional_double("rope_theta", 10000.0);
  config.tie_word_embeddings = reader.optional_bool("tie_word_embeddings", config.family != DecoderFamily::llama);
  config.torch_dtype = reader.optional_string("torch_dtype", "float32");
  const bool attention_bias = reader.optional_bool("attention_bias", false);
  config.qkv_bias = config.family == DecoderFamily::qwen2 || attention_bias;
  config.o_bias = config.family != DecoderFamily::qwen2 && attention_bias;
  config.mlp_bias = reader.optional_bool("mlp_bias", false);
  config.qk_norm = config.family == DecoderFamily::qwen3;

  if (reader.has("eos_token_id")) {
    const nlohmann::json& eos = json.at("eos_token_id");
    if (eos.is_number_integer()) config.eos_token_id = eos.get<std::int64_t>();
    else if (eos.is_array() && !eos.empty() && eos.front().is_number_integer()) config.eos_token_id = eos.front().get<std::int64_t>();
    else throw reader.invalid("eos_token_id", "an integer or a list of integers");
  }
  const std::string activation = reader.optional_string("hidden_act", "silu");
  if (activation != "silu")
    throw ConfigError(source + ": key 'hidden_act' is '" + activation + "'; the decoder's MLP is SwiGLU (silu)");
  if (reader.optional_bool("use_sliding_window", false))
    throw ConfigError(source + ": key 'use_sliding_window' is true; sliding-window attention is not supported (texts here are short: set it false)");
  if (reader.has("rope_scaling")) {
    const nlohmann::json& scaling = json.at("rope_scaling");
    const bool plain = scaling.is_object() && scaling.value("rope_type", scaling.value("type", std::string("default"))) == "default";
    if (!plain)
      throw ConfigError(source + ": key 'rope_scaling' is " + scaling.dump() + "; only plain rotary positions (rope_theta) are supported");
  }
  config.validate(source, /*bytes_per_weight=*/2);  // what bf16 weights would need; the encoder checks its own dtype
  return config;
}

DecoderConfig read_decoder_config(const std::filesystem::path& file) {
  return parse_decoder_config(read_hf_config_text(file), file.string());
}

std::string decoder_config_to_json(const DecoderConfig& config) {
  const char* architecture = config.family == DecoderFamily::qwen2   ? "Qwen2ForCausalLM"
                             : config.family == DecoderFamily::qwen3 ? "Qwen3ForCausalLM"
                                                                     : "LlamaForCausalLM";
  nlohmann::ordered_json json = {{"architectures", {architecture}},
                                 {"model_type", config.model_type()},
                                 {"vocab_size", config.vocab_size},
                                 {"hidden_size", config.hidden_size},
                                 {"intermediate_size", config.intermediate_size},
                                 {"num_hidden_layers", config.num_layers},
                                 {"num_attention_heads", config.num_heads},
                                 {"num_key_value_heads", config.num_kv_heads},
                                 {"head_dim", config.head_dim},
                                 {"max_position_embeddings", config.max_position_embeddings},
                                 {"rms_norm_eps", config.rms_norm_eps},
                                 {"rope_theta", config.rope_theta},
                                 {"hidden_act", "silu"},
                                 {"tie_word_embeddings", config.tie_word_embeddings},
                                 {"torch_dtype", config.torch_dtype}};
  if (config.family != DecoderFamily::qwen2) json["attention_bias"] = config.o_bias;
  if (config.family == DecoderFamily::llama) json["mlp_bias"] = config.mlp_bias;
  if (config.family == DecoderFamily::qwen2) json["use_sliding_window"] = false;
  if (config.eos_token_id) json["eos_token_id"] = *config.eos_token_id;
  return json.dump(2) + "\n";
}

}  // namespace xmc
