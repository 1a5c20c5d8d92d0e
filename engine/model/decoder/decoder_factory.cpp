// A decoder encoder from a run's config: a local Hugging Face folder (config.json and its safetensors
// weights; config.json alone gives a randomly initialised model), its byte-level BPE tokenizer with the prompt
// template and EOS, and LoRA adapters. With adapters the base weights are not in the run's checkpoints, so the
// run keeps the base folder's path and content hash (base_model.json in its folder) and refuses a base that
// changed since; a random base is drawn from the run's seed alone, so resume and predict rebuild the same one.

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/config/component_config.h"
#include "engine/core/atomic_file.h"
#include "engine/core/content_hash.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/model/autocast.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/model/decoder/decoder_options.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/random_state.h"
#include "engine/model/encoder_options.h"
#include "engine/model/hf_weights.h"
#include "engine/model/image_fusion.h"
#include "engine/model/transformer_options.h"
#include "engine/text/prompted_tokenizer.h"

namespace xmc {
namespace {

/// The content hash of a base model: its config.json and every weight file, byte for byte.
std::string base_model_hash(const std::filesystem::path& folder) {
  ContentHash hash;
  hash.add_file(folder / "config.json");
  if (HfWeights::present(folder))
    for (const auto& file : HfWeights::open(folder).files()) hash.add_file(file);
  return hash.hex();
}

/// Records the base in a new run's folder, or checks a recorded one against it.
void check_base_identity(const std::filesystem::path& folder, const std::filesystem::path& run_dir) {
  if (run_dir.empty()) return;
  const auto record = run_dir / "base_model.json";
  const std::string hash = base_model_hash(folder);
  std::error_code error;
  if (!std::filesystem::exists(record, error)) {
    std::filesystem::create_directories(run_dir);
    AtomicFileWriter writer(record);
    writer.stream() << nlohmann::json{{"path", std::filesystem::absolute(folder).string()}, {"content_hash", hash}}.dump(2) << "\n";
    writer.commit();
    return;
  }
  const nlohmann::json json = read_json_file(record);
  if (!json.is_object() || !json.contains("content_hash") || !json["content_hash"].is_string())
    throw InputError(record.string(), "has no content_hash of the run's base model");
  if (json["content_hash"].get<std::string>() != hash)
    throw InputError(folder.string(), "this base model's files are not the ones the run was trained on (content hash " + hash + ", the run recorded " +
                                          json["content_hash"].get<std::string>() + " in " + record.string() +
                                          "); its adapters only make sense on that base: point encoder.path at it");
}

}  // namespace

BuiltEncoder make_decoder_encoder(const ComponentConfig& config, const std::vector<std::string>& /*train_texts*/,
                                  const std::filesystem::path& run_dir) {
  const EncoderOptions& common = config.get<EncoderOptions>();
  const TransformerOptions& transformer = config.get<TransformerOptions>();
  const DecoderOptions& decoder = config.get<DecoderOptions>();
  const std::filesystem::path& folder = common.path;

  DecoderEncoderOptions options;
  options.pooling = transformer.pooling == "last" ? DecoderPooling::last : DecoderPooling::mean;
  options.max_len = transformer.max_len;
  options.device = parse_device(config.run.device);
  options.autocast = parse_precision(transformer.precision, "encoder.precision");
  options.lora.spec = {.rank = decoder.lora_rank, .alpha = decoder.lora_alpha, .rslora = decoder.lora_rslora == "on", .dropout = decoder.lora_dropout};
  options.lora.targets = parse_lora_targets(decoder.lora_targets);
  options.lora.base_dtype = decoder.base_dtype == "bf16" ? torch::kBFloat16 : torch::kFloat;
  options.checkpointing = decoder.checkpointing == "on";

  const DecoderConfig model_config = read_decoder_config(folder / "config.json");
  std::shared_ptr<DecoderEncoderImpl> encoder;
  std::string description;
  if (HfWeights::present(folder)) {
    encoder = load_decoder_encoder(folder, options).ptr();
    description = "decoder encoder (" + model_config.model_type() + ") from " + folder.string();
  } else {
    // Drawn from the run's seed alone, the global generators left as they were (manual_seed seeds the device's
    // too): resume and predict draw the same base.
    const RandomState before = RandomState::of(options.device);
    torch::manual_seed(config.run.seed ^ 0x5DEECE66DULL);
    encoder = std::make_shared<DecoderEncoderImpl>(model_config, options);
    before.restore();
    description = "decoder encoder (" + model_config.model_type() + "), randomly initialised from " + (folder / "config.json").string();
  }
  if (options.lora.spec.rank > 0) check_base_identity(folder, run_dir);

  const auto tokenizer_json = tokenizer_json_of(decoder.tokenizer.empty() ? folder : decoder.tokenizer);
  ByteLevelBpe bpe = ByteLevelBpe::from_file(tokenizer_json);
  if (bpe.vocab_size() > model_config.vocab_size)
    throw InputError(tokenizer_json.string(), "gives ids up to " + std::to_string(bpe.vocab_size() - 1) + " but " + (folder / "config.json").string() +
                                                  " has vocab_size " + std::to_string(model_config.vocab_size) + ": they belong to different models");
  const std::int32_t eos = decoder_eos_id(bpe, tokenizer_json, model_config.eos_token_id, folder / "config.json");
  const ImageFusionOptions images = image_fusion_for(config);
  encoder->attach_images(images, bpe.encode(" and its image:"));  // ViXML's words before the image tokens

  std::int64_t trainable = 0;
  for (const auto& p : encoder->parameters()) trainable += p.numel();
  description += ", " + std::to_string(model_config.num_layers) + " layers, hidden " + std::to_string(model_config.hidden_size) + "; " +
                 (options.lora.spec.rank > 0 ? "LoRA r=" + std::to_string(options.lora.spec.rank) + " on " + decoder.lora_targets + ": " : "") +
                 std::to_string(trainable) + " trained of " +
                 std::to_string(static_cast<std::int64_t>(model_config.parameter_count()) + (images.max_images > 0 ? (images.image_dim + 1) * model_config.hidden_size : 0)) +
                 " parameters";

  description += describe_image_fusion(images);
  return {std::move(encoder), std::make_unique<PromptedTokenizer>(std::move(bpe), decoder.prompt_template, eos,
                                                                           std::min(options.max_len, model_config.max_position_embeddings)), description};
}

}  // namespace xmc
