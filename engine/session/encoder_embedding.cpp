#include "engine/session/encoder_embedding.h"

#include <torch/torch.h>

#include <algorithm>
#include <thread>
#include <nlohmann/json.hpp>

#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/model/cpu_thread_policy.h"
#include "engine/model/decoder/decoder_options.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/encoder_options.h"
#include "engine/model/transformer_options.h"

namespace xmc {
namespace {

/// "decoder" or "bert", by config.json's model_type.
std::string encoder_type_of(const std::filesystem::path& folder) {
  const auto file = folder / "config.json";
  std::error_code error;
  if (!std::filesystem::exists(file, error)) throw InputError(file.string(), "missing (an encoder folder needs config.json)");
  const nlohmann::json json = read_json_file(file);
  const std::string type = json.is_object() && json.contains("model_type") && json["model_type"].is_string() ? json["model_type"].get<std::string>() : "";
  if (type == "qwen2" || type == "qwen3" || type == "llama") return "decoder";
  if (type == "bert" || type == "distilbert" || type.empty()) return "bert";
  throw InputError(file.string(), "model_type '" + type + "' is neither a decoder (qwen2, qwen3, llama) nor a BERT-family encoder");
}

}  // namespace

TextVectors embed_with_encoder(const EncoderEmbedRequest& request, const std::vector<std::string>& texts, Progress& progress) {
  TrainConfig config;
  config.device = request.device;
  config.seed = request.seed;
  config.edit<EncoderOptions>().type = encoder_type_of(request.folder);
  config.edit<EncoderOptions>().path = request.folder;
  config.edit<TransformerOptions>().max_len = request.max_len;
  config.edit<TransformerOptions>().pooling = request.pooling;
  config.edit<DecoderOptions>().lora_rank = 0;  // the bare model: no adapters
  config.edit<DecoderOptions>().tokenizer = request.tokenizer;
  if (!request.prompt_template.empty()) config.edit<DecoderOptions>().prompt_template = request.prompt_template;
  const std::string& type = config.get<EncoderOptions>().type;
  if ((request.pooling == "cls" && type != "bert") || (request.pooling == "last" && type != "decoder") ||
      (request.pooling != "mean" && request.pooling != "cls" && request.pooling != "last"))
    throw ConfigError("--pooling: " + request.pooling + " is not a pooling of a " + type + " encoder (mean, or " +
                      (type == "bert" ? "cls" : "last") + ")");
  BuiltEncoder built = make_encoder(component_config(config), {}, {});
  built.encoder->eval();
  use_cpu_threads(*built.encoder, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));

  TextVectors out;
  out.rows = static_cast<std::int64_t>(texts.size());
  out.dim = built.encoder->output_dim();
  out.values.reserve(static_cast<std::size_t>(out.rows * out.dim));
  constexpr std::int64_t kBatch = 64;
  progress.start("encoding texts", out.rows);
  torch::NoGradGuard no_grad;
  for (std::int64_t begin = 0; begin < out.rows; begin += kBatch) {
    const std::int64_t end = std::min(out.rows, begin + kBatch);
    const std::vector<std::string> chunk(texts.begin() + begin, texts.begin() + end);
    const TokenizedCorpus corpus = built.tokenizer->tokenize(chunk);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(end - begin));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    const torch::Tensor vectors = built.encoder->encode(corpus, rows).to(torch::kCPU, torch::kFloat).contiguous();
    out.values.insert(out.values.end(), vectors.data_ptr<float>(), vectors.data_ptr<float>() + vectors.numel());
    progress.update(end);
  }
  progress.finish();
  return out;
}

}  // namespace xmc
