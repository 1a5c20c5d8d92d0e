#pragma once
// Engine-internal (includes torch). The `decoder` encoder (ViXML's "dual decoders"): a decoder-only language
// model — Qwen2, Qwen3 or Llama, architecturally identical to Hugging Face's Qwen2Model / Qwen3Model /
// LlamaModel — whose final normed hidden states are pooled into a text's vector:
//   x = embed_tokens[ids];  each layer (decoder_layer.h) under a causal mask that also hides right padding;
//   h = RMSNorm(x);  pooled = mean of h over the real tokens (the prompt's text and its EOS), or h at the EOS.
// Rows of the corpus are already prompted and end with EOS (PromptedTokenizer). With LoRA adapters only they
// (and the heads above) are trained; the base weights are frozen tensors, not parameters (lora_linear.h).
// Parameter names follow Hugging Face's without the "model." prefix ("layers.0.self_attn.q_proj.lora_A").
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/decoder/decoder_config.h"
#include "engine/model/decoder/decoder_layer.h"
#include "engine/model/encoder.h"
#include "engine/model/image_fusion.h"

namespace xmc {

enum class DecoderPooling { mean, last };

struct DecoderEncoderOptions {
  DecoderPooling pooling = DecoderPooling::mean;
  std::int64_t max_len = 32;           ///< tokens per text, EOS included; capped at max_position_embeddings
  torch::Device device = torch::kCPU;
  torch::ScalarType autocast = torch::kFloat;  ///< forward under autocast to this dtype; output fp32 either way
  DecoderLoraPlan lora;                ///< rank 0: no adapters, every weight trained
  bool checkpointing = false;          ///< recompute each layer in backward (activation_checkpoint.h)
};

/// One right-padded batch: input_ids [B, L] int64 (padding 0), attention_mask [B, L] bool, on the device. With
/// early image fusion a row with images reads: its text, the image prefix's ids, one slot per image, EOS.
struct DecoderBatch final : EncoderInput {
  torch::Tensor input_ids;
  torch::Tensor attention_mask;
  BatchImages images;
};

class DecoderEncoderImpl : public EncoderImpl {
 public:
  /// A randomly initialised model as Hugging Face initialises one (projections and embeddings ~ N(0, 0.02²),
  /// biases 0, norms 1). Throws ConfigError for an invalid config or max_len < 2.
  DecoderEncoderImpl(const DecoderConfig& config, const DecoderEncoderOptions& options);

  /// Rows longer than max_len keep their first max_len − 1 tokens and their last one (EOS).
  std::shared_ptr<const EncoderInput> prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                    bool for_training) const override;
  torch::Tensor encode_input(const EncoderInput& input) override;
  std::int64_t output_dim() const override { return config_.hidden_size; }
  bool large_products() const override { return true; }
  torch::Device device() const override { return options_.device; }

  DecoderBatch make_batch(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) const;
  /// The final normed hidden states [B, L, hidden] of a right-padded batch; `images` (early fusion) replace the
  /// token embeddings at their positions.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, const BatchImages* images = nullptr);

  /// Fuses images from the corpus's bank from now on: registers "image_projection" (m -> hidden, trained even
  /// when the base is frozen). `prefix` is the tokenizer's ids of the text that introduces a row's images (ViXML:
  /// " and its image:"). Called once, after the base weights are loaded. ConfigError for a second call.
  void attach_images(const ImageFusionOptions& options, std::vector<std::int32_t> prefix);
  const ImageFusionOptions& image_fusion() const { return image_fusion_; }
  /// Pools hidden [B, L, H] by options().pooling over attention_mask [B, L] -> [B, H].
  torch::Tensor pool(const torch::Tensor& hidden, const torch::Tensor& attention_mask) const;

  const DecoderConfig& config() const { return config_; }
  const DecoderEncoderOptions& options() const { return options_; }
  /// Every base weight under its Hugging Face name without "model." ("embed_tokens.weight",
  /// "layers.3.mlp.up_proj.weight", "norm.weight"), trained or frozen: what loading fills.
  std::vector<std::pair<std::string, torch::Tensor*>> base_weights();
  /// The same names with each adapter merged into its projection's weight (float32, CPU): an exported model.
  std::vector<std::pair<std::string, torch::Tensor>> merged_weights();

 private:
  DecoderConfig config_;
  DecoderEncoderOptions options_;
  torch::Tensor embed_tokens_;
  std::vector<DecoderLayer> layers_;
  RmsNorm norm_{nullptr};
  ImageFusionOptions image_fusion_{.max_images = 0};
  std::vector<std::int32_t> image_prefix_;
  ImageProjection image_projection_{nullptr};
};
TORCH_MODULE(DecoderEncoder);

/// Reads `folder`/config.json and its weights (model.safetensors or shards; names with or without "model.";
/// F32/F16/BF16 converted to the held dtype; lm_head and other tensors ignored). A missing tensor or a wrong
/// shape throws InputError naming the file, the tensor and both shapes.
DecoderEncoder load_decoder_encoder(const std::filesystem::path& folder, const DecoderEncoderOptions& options = {});

/// Writes `folder`/config.json and model.safetensors ("model."-prefixed float32 tensors, adapters merged) so that
/// Hugging Face transformers and load_decoder_encoder() read the merged model. An untied config gets lm_head
/// from `lm_head` when given (the base model's), else the embeddings (and tie_word_embeddings set true).
void save_decoder_model(DecoderEncoderImpl& encoder, const std::filesystem::path& folder, const torch::Tensor& lm_head = {});

}  // namespace xmc
