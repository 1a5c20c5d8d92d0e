#include "engine/model/decoder/decoder_encoder.h"

#include <algorithm>
#include <limits>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/model/autocast.h"
#include "engine/model/hf_weights.h"
#include "engine/model/safetensors_file.h"

namespace xmc {
namespace {

constexpr double kInitStd = 0.02;  // Hugging Face initializer_range

std::vector<std::int64_t> shape_of(const torch::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

}  // namespace

DecoderEncoderImpl::DecoderEncoderImpl(const DecoderConfig& config, const DecoderEncoderOptions& options)
    : config_(config), options_(options) {
  const bool frozen = options_.lora.spec.rank > 0;
  config_.validate("decoder config", frozen && options_.lora.base_dtype == torch::kBFloat16 ? 2 : 4);
  if (options_.max_len < 2)
    throw ConfigError("decoder encoder: max_len " + std::to_string(options_.max_len) + " must be at least 2 (a text and its EOS)");
  options_.max_len = std::min(options_.max_len, config_.max_position_embeddings);

  const auto held = torch::TensorOptions().device(options_.device).dtype(frozen ? options_.lora.base_dtype : torch::kFloat);
  embed_tokens_ = torch::empty({config_.vocab_size, config_.hidden_size}, held.dtype(torch::kFloat)).normal_(0.0, kInitStd).to(held.dtype());
  if (!frozen) {
    auto embeddings = register_module("embed_tokens", std::make_shared<torch::nn::Module>());
    embed_tokens_ = embeddings->register_parameter("weight", embed_tokens_);
  }
  torch::nn::ModuleList layer_list;
  for (std::int64_t i = 0; i < config_.num_layers; ++i) {
    layers_.push_back(DecoderLayer(config_, options_.lora, options_.device));
    layer_list->push_back(layers_.back());
  }
  register_module("layers", layer_list);
  norm_ = register_module("norm", RmsNorm(config_.hidden_size, config_.rms_norm_eps, !frozen, options_.device, held.dtype().toScalarType()));
}

void DecoderEncoderImpl::attach_images(const ImageFusionOptions& options, std::vector<std::int32_t> prefix) {
  if (image_projection_) throw ConfigError("decoder encoder: images are already fused");
  if (options.max_images <= 0) return;
  if (options.image_dim < 1) throw ConfigError("decoder encoder: an image projection needs the bank's embedding size, got " + std::to_string(options.image_dim));
  for (const std::int32_t id : prefix)
    if (id < 0 || id >= config_.vocab_size) throw ConfigError("decoder encoder: the image prefix has token id " + std::to_string(id) + ", outside the vocabulary");
  const auto extra = static_cast<std::int64_t>(prefix.size()) + options.max_images;
  if (options.kind == ImageFusionKind::early && options_.max_len + extra > config_.max_position_embeddings)
    throw ConfigError("images.max: " + std::to_string(options_.max_len) + " text tokens and " + std::to_string(extra) +
                      " image tokens (prefix included) exceed the model's max_position_embeddings " + std::to_string(config_.max_position_embeddings));
  image_fusion_ = options;
  image_prefix_ = std::move(prefix);
  image_projection_ = register_module("image_projection", ImageProjection(options.image_dim, config_.hidden_size, options_.device));
}

DecoderBatch DecoderEncoderImpl::make_batch(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) const {
  const auto batch = static_cast<std::int64_t>(rows.size());
  for (const std::int64_t row : rows)
    if (row < 0 || row >= corpus.size())
      throw ConfigError("decoder encoder: row " + std::to_string(row) + " is outside the corpus (" + std::to_string(corpus.size()) + " texts)");
  DecoderBatch prepared;
  prepared.images = gather_batch_images(corpus, rows, image_fusion_.max_images, image_fusion_.image_dim);
  const bool early = image_fusion_.kind == ImageFusionKind::early;
  const auto prefix = static_cast<std::int64_t>(image_prefix_.size());
  auto images_of = [&](std::int64_t b) { return early ? prepared.images.per_row[static_cast<std::size_t>(b)] : std::int64_t{0}; };
  std::int64_t length = 1;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t text = std::min<std::int64_t>(static_cast<std::int64_t>(corpus.tokens(rows[static_cast<std::size_t>(b)]).size()), options_.max_len);
    length = std::max(length, text + (images_of(b) > 0 ? prefix + images_of(b) : 0));
  }
  torch::Tensor ids = torch::zeros({batch, length}, torch::kLong);
  torch::Tensor mask = torch::zeros({batch, length}, torch::kBool);
  torch::Tensor positions = torch::empty({prepared.images.empty() ? 0 : prepared.images.rows.size(0)}, torch::kLong);
  std::int64_t* ids_data = ids.data_ptr<std::int64_t>();
  bool* mask_data = mask.data_ptr<bool>();
  std::int64_t* position_data = positions.data_ptr<std::int64_t>();
  std::int64_t placed = 0;
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto tokens = corpus.tokens(rows[static_cast<std::size_t>(b)]);
    const auto size = static_cast<std::int64_t>(tokens.size());
    if (size == 0)
      throw ConfigError("decoder encoder: text " + std::to_string(rows[static_cast<std::size_t>(b)]) +
                        " has no tokens; a decoder's rows end with EOS (was the corpus made by its tokenizer?)");
    const std::int64_t kept = std::min(size, options_.max_len);
    std::int64_t at = 0;
    auto put = [&](std::int32_t id) {
      if (id < 0 || id >= config_.vocab_size)
        throw ConfigError("decoder encoder: token id " + std::to_string(id) + " of text " + std::to_string(rows[static_cast<std::size_t>(b)]) +
                          " is outside the vocabulary (vocab_size " + std::to_string(config_.vocab_size) +
                          "); was the corpus tokenized with this model's tokenizer?");
      ids_data[b * length + at] = id;
      mask_data[b * length + at] = true;
      ++at;
    };
    for (std::int64_t i = 0; i + 1 < kept; ++i) put(tokens[static_cast<std::size_t>(i)]);  // the text, cut to max_len − 1
    if (images_of(b) > 0) {
      for (const std::int32_t id : image_prefix_) put(id);
      for (std::int64_t i = 0; i < images_of(b); ++i) {
        position_data[placed++] = at;
        mask_data[b * length + at] = true;  // its id stays 0: the projection replaces the embedding
        ++at;
      }
    }
    put(tokens.back());  // EOS (the last token, also of a cut text)
  }
  stage_batch_images(prepared.images, positions, options_.device);
  prepared.input_ids = staged_to(ids, options_.device);
  prepared.attention_mask = staged_to(mask, options_.device);
  return prepared;
}

torch::Tensor DecoderEncoderImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, const BatchImages* images) {
  TORCH_CHECK(input_ids.dim() == 2 && attention_mask.sizes() == input_ids.sizes(),
              "DecoderEncoder::forward: input_ids and attention_mask must both be [B, L]");
  const std::int64_t batch = input_ids.size(0), length = input_ids.size(1);
  TORCH_CHECK(length <= config_.max_position_embeddings, "DecoderEncoder::forward: sequence length ", length,
              " exceeds max_position_embeddings ", config_.max_position_embeddings);
  torch::Tensor x = torch::embedding(embed_tokens_, input_ids).to(torch::kFloat);
  if (images != nullptr && image_projection_) x = place_image_tokens(x, *images, *image_projection_);
  const auto [cos, sin] = rotary_tables(length, config_.head_dim, config_.rope_theta, x.device());
  // Key j is visible to query i when j <= i and j is a real token (right padding is never attended to).
  const torch::Tensor causal = torch::ones({length, length}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).tril();
  const torch::Tensor visible = causal.view({1, 1, length, length}) & attention_mask.to(torch::kBool).view({batch, 1, 1, length});
  const torch::Tensor mask = torch::zeros(visible.sizes(), x.options()).masked_fill(visible.logical_not(), std::numeric_limits<float>::lowest());
  const std::vector<torch::Tensor> context{cos, sin, mask};
  for (auto& layer : layers_) {
    if (options_.checkpointing && is_training()) x = run_checkpointed(*layer, x, context, options_.device, options_.autocast);
    else x = layer->run(x, context);
  }
  return norm_(x);
}

torch::Tensor DecoderEncoderImpl::pool(const torch::Tensor& hidden, const torch::Tensor& attention_mask) const {
  const torch::Tensor real = attention_mask.to(torch::kBool);
  if (options_.pooling == DecoderPooling::last) {
    const torch::Tensor last = real.to(torch::kLong).sum(1) - 1;  // right padding: the EOS is the last real token
    return hidden.gather(1, last.view({-1, 1, 1}).expand({hidden.size(0), 1, hidden.size(2)})).squeeze(1);
  }
  const torch::Tensor weights = real.to(hidden.scalar_type()).unsqueeze(-1);
  return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1e-9);
}

std::shared_ptr<const EncoderInput> DecoderEncoderImpl::prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                                      bool /*for_training*/) const {
  if (rows.empty()) return std::make_shared<DecoderBatch>();
  return std::make_shared<DecoderBatch>(make_batch(corpus, rows));
}

torch::Tensor DecoderEncoderImpl::encode_input(const EncoderInput& input) {
  const auto& batch = dynamic_cast<const DecoderBatch&>(input);
  if (!batch.input_ids.defined()) return torch::empty({0, config_.hidden_size}, torch::TensorOptions().device(device()));
  const AutocastScope mixed_precision(device(), options_.autocast);
  const bool early = image_fusion_.kind == ImageFusionKind::early;
  torch::Tensor pooled = pool(forward(batch.input_ids, batch.attention_mask, early ? &batch.images : nullptr), batch.attention_mask);
  if (image_projection_ && !early) pooled = add_pooled_images(pooled, batch.images, *image_projection_);
  return pooled.to(torch::kFloat);
}

std::vector<std::pair<std::string, torch::Tensor*>> DecoderEncoderImpl::base_weights() {
  std::vector<std::pair<std::string, torch::Tensor*>> out{{"embed_tokens.weight", &embed_tokens_}};
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (auto& [name, tensor] : layers_[i]->base_weights()) out.emplace_back("layers." + std::to_string(i) + "." + name, tensor);
  out.emplace_back("norm.weight", &norm_->weight());
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> DecoderEncoderImpl::merged_weights() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  std::map<std::string, torch::Tensor> merged;  // projection weight name -> W + s·BA
  for (std::size_t i = 0; i < layers_.size(); ++i)
    for (auto& [name, projection] : layers_[i]->projections())
      merged["layers." + std::to_string(i) + "." + name + ".weight"] = projection->merged_weight();
  for (auto& [name, tensor] : base_weights()) {
    const auto at = merged.find(name);
    out.emplace_back(name, at != merged.end() ? at->second : tensor->detach().to(torch::kCPU, torch::kFloat));
  }
  return out;
}

DecoderEncoder load_decoder_encoder(const std::filesystem::path& folder, const DecoderEncoderOptions& options) {
  const DecoderConfig config = read_decoder_config(folder / "config.json");
  const HfWeights weights = HfWeights::open(folder);
  const std::string config_file = (folder / "config.json").string();
  DecoderEncoder encoder(config, options);
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : encoder->base_weights()) {
    const SafetensorsFile* file = nullptr;
    const TensorInfo* info = weights.find("model." + name, &file);
    if (info == nullptr) info = weights.find(name, &file);
    if (info == nullptr)
      throw InputError(weights.source().string(), "tensor 'model." + name + "' (shape " + format_shape(shape_of(*tensor)) + ") is missing");
    const auto expected = shape_of(*tensor);
    if (info->shape != expected)
      throw InputError(file->path().string(), "tensor '" + info->name + "' has shape " + format_shape(info->shape) + " but " + config_file +
                                                  " needs " + format_shape(expected));
    tensor->copy_(safetensors_tensor(*file, *info, tensor->scalar_type()));
  }
  return encoder;
}

void save_decoder_model(DecoderEncoderImpl& encoder, const std::filesystem::path& folder, const torch::Tensor& lm_head) {
  std::filesystem::create_directories(folder);
  DecoderConfig config = encoder.config();
  std::vector<std::pair<std::string, torch::Tensor>> tensors = encoder.merged_weights();
  for (auto& [name, tensor] : tensors) name = "model." + name;
  if (!config.tie_word_embeddings) {
    if (lm_head.defined()) tensors.emplace_back("lm_head.weight", lm_head.detach().to(torch::kCPU, torch::kFloat).contiguous());
    else config.tie_word_embeddings = true;
  }
  config.torch_dtype = "float32";
  std::vector<TensorToWrite> out;
  for (auto& [name, tensor] : tensors) {
    tensor = tensor.contiguous();
    out.push_back({name, SafeDtype::F32, shape_of(tensor),
                   {static_cast<const std::byte*>(tensor.data_ptr()), static_cast<std::size_t>(tensor.nbytes())}});
  }
  write_safetensors(folder / "model.safetensors", out, {{"format", "pt"}});
  AtomicFileWriter writer(folder / "config.json");
  writer.stream() << decoder_config_to_json(config);
  writer.commit();
}

}  // namespace xmc
