#pragma once
// The architecture of a decoder-only language model used as an encoder (plain C++, no torch), read from a
// Hugging Face config.json: Qwen2 (q/k/v biases), Qwen3 (q/k RMSNorm per head, head_dim of its own) and
// Llama (optional attention and MLP biases). What the forward needs and nothing else: the LM head is never
// used by an encoder, so tie_word_embeddings only matters when a model is written back (xmc export).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace xmc {

enum class DecoderFamily { qwen2, qwen3, llama };

struct DecoderConfig {
  DecoderFamily family = DecoderFamily::qwen2;
  std::int64_t vocab_size = 151936;
  std::int64_t hidden_size = 896;
  std::int64_t intermediate_size = 4864;
  std::int64_t num_layers = 24;            ///< "num_hidden_layers"
  std::int64_t num_heads = 14;             ///< "num_attention_heads"
  std::int64_t num_kv_heads = 2;           ///< "num_key_value_heads" (grouped-query attention); default num_heads
  std::int64_t head_dim = 64;              ///< "head_dim" where given (Qwen3), else hidden_size / num_heads
  std::int64_t max_position_embeddings = 32768;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool qkv_bias = true;                    ///< Qwen2 always; Llama/Qwen3: "attention_bias"
  bool o_bias = false;                     ///< Llama/Qwen3: "attention_bias"
  bool mlp_bias = false;                   ///< Llama: "mlp_bias"
  bool qk_norm = false;                    ///< Qwen3
  bool tie_word_embeddings = false;
  std::optional<std::int64_t> eos_token_id;  ///< the first when config.json lists several
  std::string torch_dtype = "float32";     ///< the dtype the checkpoint was saved in (informational)

  std::string model_type() const;          ///< "qwen2" | "qwen3" | "llama"
  /// Parameters of the transformer (embeddings, layers, final norm; no LM head).
  double parameter_count() const;
  /// Throws ConfigError("SOURCE: key ...") for a non-positive size, heads that do not divide, an eos id outside
  /// the vocabulary, or sizes this machine's memory cannot hold in `bytes_per_weight`-byte weights.
  void validate(const std::string& source, double bytes_per_weight = 4) const;
};

/// Parses a config.json of model_type qwen2, qwen3 or llama. Keys it cannot honour are refused by name
/// (a sliding window in use, rope_scaling, an activation other than silu); missing or ill-typed keys throw
/// ConfigError naming `source` and the key.
DecoderConfig parse_decoder_config(const std::string& json_text, const std::string& source);
/// The same from a file (InputError when it cannot be read).
DecoderConfig read_decoder_config(const std::filesystem::path& file);
/// A config.json that Hugging Face transformers and read_decoder_config() both read back to `config`.
std::string decoder_config_to_json(const DecoderConfig& config);

}  // namespace xmc
