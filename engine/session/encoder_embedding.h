#pragma once
// The pooled output of a bare encoder (no run, no head) for texts (plain C++; `xmc embed --encoder DIR`): a
// local Hugging Face folder of a BERT-family model or a decoder-only LLM, its tokenizer, the default prompt.
// For checks against other implementations and for users' own pipelines.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/progress.h"

namespace xmc {

struct EncoderEmbedRequest {
  std::filesystem::path folder;      ///< config.json and weights (config.json alone: random weights from `seed`)
  std::filesystem::path tokenizer;   ///< decoder: tokenizer.json or its folder ("" = the model folder's)
  std::string prompt_template;       ///< decoder: "" = the default ("This product text: {text}")
  std::string pooling = "mean";      ///< mean | cls (bert) | last (decoder)
  std::int64_t max_len = 32;
  std::string device = "cpu";
  std::uint64_t seed = 1;
};

struct TextVectors {
  std::int64_t rows = 0;
  std::int64_t dim = 0;
  std::vector<float> values;  ///< [rows × dim] row-major
};

/// Encodes `texts` in batches (progress reported). The encoder kind comes from config.json's model_type
/// (qwen2, qwen3, llama: decoder; bert, distilbert: bert). Throws ConfigError/InputError naming the file or key.
TextVectors embed_with_encoder(const EncoderEmbedRequest& request, const std::vector<std::string>& texts, Progress& progress);

}  // namespace xmc
