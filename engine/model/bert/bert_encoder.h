#pragma once
// Engine-internal (includes torch). The `bert` encoder of DESIGN.md section 2: a BERT / DistilBERT / MiniLM
// transformer, architecturally identical to Hugging Face's BertModel / DistilBertModel (post-LayerNorm):
//   embeddings  = LayerNorm(word[id] + position[i] + token_type[0]) -> dropout   (DistilBERT: no token type)
//   each layer  x = LayerNorm(x + dropout(Wo · attention(x)));  x = LayerNorm(x + dropout(W2 · act(W1 · x)))
//   pooling     mean over the non-pad tokens ([CLS] and [SEP] included, as sentence-transformers does) or
//               the [CLS] (first) token.
// Weights come from a local Hugging Face folder (config.json + model.safetensors); the module's parameter
// names are Hugging Face's BertModel names ("encoder.layer.0.attention.self.query.weight", ...).
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/model/encoder.h"
#include "engine/model/image_fusion.h"

namespace xmc {

enum class BertFamily { bert, distilbert };  ///< config.json model_type; MiniLM checkpoints are "bert"
enum class BertActivation { gelu, gelu_tanh, relu };  ///< "gelu" (exact, erf); "gelu_new"/"gelu_pytorch_tanh"; "relu"
enum class BertPooling { mean, cls };

/// The architecture, as read from a Hugging Face config.json (BERT or DistilBERT key names).
struct BertConfig {
  BertFamily family = BertFamily::bert;
  std::int64_t vocab_size = 30522;
  std::int64_t hidden_size = 768;               ///< DistilBERT: "dim"
  std::int64_t num_layers = 12;                 ///< "num_hidden_layers" / "n_layers"
  std::int64_t num_heads = 12;                  ///< "num_attention_heads" / "n_heads"
  std::int64_t intermediate_size = 3072;        ///< "intermediate_size" / "hidden_dim"
  std::int64_t max_position_embeddings = 512;
  std::int64_t type_vocab_size = 2;             ///< BERT only (DistilBERT has no token-type embeddings)
  std::int64_t pad_token_id = 0;
  double layer_norm_eps = 1e-12;
  BertActivation activation = BertActivation::gelu;  ///< "hidden_act" / "activation"
  double hidden_dropout = 0.1;                  ///< "hidden_dropout_prob" / "dropout"
  double attention_dropout = 0.1;               ///< "attention_probs_dropout_prob" / "attention_dropout"

  std::int64_t head_dim() const { return hidden_size / num_heads; }
  /// Throws ConfigError("SOURCE: key ...") when a size is non-positive or hidden_size % num_heads != 0.
  void validate(const std::string& source) const;
};

/// Parses a Hugging Face config.json. model_type "bert" or "distilbert" (inferred from the keys when absent).
/// Missing or invalid keys throw ConfigError naming `file` and the key.
BertConfig read_bert_config(const std::filesystem::path& file);
/// The same, from JSON text; `source` names it in error messages.
BertConfig parse_bert_config(const std::string& json_text, const std::string& source);
/// A Hugging Face-compatible config.json text ("architectures": ["BertModel"] or ["DistilBertModel"]).
std::string bert_config_to_json(const BertConfig& config);

enum class BertPacking { automatic, on, off };

struct BertEncoderOptions {
  BertPooling pooling = BertPooling::mean;  ///< mean over non-pad tokens, or the [CLS] token
  std::int64_t max_len = 128;  ///< tokens per text, [CLS] and [SEP] included; capped at max_position_embeddings
  torch::Device device = torch::kCPU;  ///< where the parameters live and encode() returns its output
  /// encode() runs the transformer under autocast to this dtype (kBFloat16: bf16 products, fp32 weights,
  /// LayerNorms and softmax by LibTorch's autocast policy); kFloat = plain fp32. The output is fp32 either way.
  torch::ScalarType autocast = torch::kFloat;
  /// Real tokens through the projections, MLPs and norms packed, without padding (attention still per text):
  /// BertPacking::automatic packs a batch on a CPU whose padding is at least a tenth of its positions.
  BertPacking packing = BertPacking::automatic;
  /// Dropout on embeddings, attention probabilities and sub-layer outputs; unset: the config's
  /// hidden_dropout_prob / attention_probs_dropout_prob (0.1 when the config names none).
  std::optional<double> dropout;
};

/// One padded batch: input_ids [B, L] int64 (pad = config.pad_token_id), attention_mask [B, L] bool
/// (true = real token), both on the encoder's device.
/// With image fusion, `images` holds the rows' images: early fusion puts them after each text's [SEP]
/// (their input_ids are padding there, their mask true), late fusion adds them after pooling.
struct BertBatch final : EncoderInput {
  torch::Tensor input_ids;
  torch::Tensor attention_mask;
  BatchImages images;
  /// The flat positions (b * L + i) of the real tokens, ascending, int64 [T] on the encoder's device, made on the host
  /// with the batch (undefined: found from attention_mask when needed).
  torch::Tensor token_rows;
};

namespace bert_detail {
class EmbeddingsImpl;
class LayerImpl;
}  // namespace bert_detail

class BertEncoderImpl : public EncoderImpl {
 public:
  /// A randomly initialised encoder, as Hugging Face initialises one: Linear and Embedding weights
  /// ~ N(0, 0.02), biases 0, LayerNorm (1, 0), the pad row of the word embeddings 0.
  /// Throws ConfigError on an invalid config, max_len < 2 or dropout outside [0, 1).
  BertEncoderImpl(const BertConfig& config, const BertEncoderOptions& options);

  /// encode(): rows of `corpus` (token ids beginning with [CLS] and ending with [SEP]) -> [rows.size(),
  /// hidden_size] float32 on device(). Texts longer than max_len keep their first max_len − 1 tokens and their
  /// last one ([SEP]). All rows run as one batch, padded to the longest. Dropout applies in train() mode only.
  std::shared_ptr<const EncoderInput> prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                    bool for_training) const override;
  torch::Tensor encode_input(const EncoderInput& input) override;
  /// Two text-only batches padded to the longer length and stacked, unless padding would add more than a
  /// quarter to their tokens (a batch of short label titles beside long queries runs faster apart).
  std::shared_ptr<const EncoderInput> join_inputs(const EncoderInput& first, const EncoderInput& second) const override;
  std::int64_t output_dim() const override { return config_.hidden_size; }
  bool large_products() const override { return true; }
  torch::Device device() const override;

  /// Truncates and pads rows of `corpus` into a batch (ConfigError on a token id outside the vocabulary).
  /// max_len bounds the text; fused image tokens come on top of it.
  BertBatch make_batch(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) const;
  /// The last layer's hidden states [B, L, hidden_size] of a batch (input_ids [B, L], attention_mask [B, L]);
  /// `images` (early fusion) replace the word embeddings at their positions.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, const BatchImages* images = nullptr);
  /// forward() over the batch's real tokens only: the projections, MLPs and LayerNorms see [real tokens, hidden], the
  /// attention each text alone. Hidden states [B, L, hidden_size], zeros at padded positions (forward() leaves values
  /// there that no pooling reads). `token_rows`: the real tokens' flat positions (BertBatch::token_rows), or undefined.
  torch::Tensor forward_packed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, const torch::Tensor& token_rows = {},
                               const BatchImages* images = nullptr);
  /// Whether encode() packs a batch of `real_tokens` in `positions` padded positions (options().packing).
  bool packs(std::int64_t real_tokens, std::int64_t positions) const;

  /// Fuses images from the corpus's bank from now on: registers "image_projection" (m -> hidden). Called once,
  /// after the text model's weights are loaded (they never include it). ConfigError for a second call or m < 1.
  void attach_images(const ImageFusionOptions& options);
  /// The fusion in effect; max_images 0 when the encoder reads texts only.
  const ImageFusionOptions& image_fusion() const { return image_fusion_; }
  /// Pools hidden states [B, L, H] with attention_mask [B, L] by options().pooling -> [B, H].
  torch::Tensor pool(const torch::Tensor& hidden, const torch::Tensor& attention_mask) const;

  const BertConfig& config() const { return config_; }
  /// The options in effect (max_len already capped at max_position_embeddings).
  const BertEncoderOptions& options() const { return options_; }

 private:
  BertConfig config_;
  BertEncoderOptions options_;
  std::shared_ptr<bert_detail::EmbeddingsImpl> embeddings_;
  std::vector<std::shared_ptr<bert_detail::LayerImpl>> layers_;
  ImageFusionOptions image_fusion_{.max_images = 0};
  ImageProjection image_projection_{nullptr};
};
TORCH_MODULE(BertEncoder);

/// Loads `folder`/config.json and `folder`/model.safetensors (Hugging Face BERT, MiniLM or DistilBERT names,
/// with or without a "bert." / "distilbert." prefix; LayerNorm "weight"/"bias" or old "gamma"/"beta";
/// F32, F16, BF16 or F64 weights, converted to float32). Unused tensors (pooler, MLM head) are ignored.
/// A missing tensor or a shape mismatch throws InputError naming the file, the tensor and both shapes.
BertEncoder load_bert_encoder(const std::filesystem::path& folder, const BertEncoderOptions& options = {});

/// Writes `folder`/config.json and `folder`/model.safetensors (float32, Hugging Face BertModel or
/// DistilBertModel names by config.family) so that load_bert_encoder() reads back the same module (the text model:
/// an image projection is not part of a Hugging Face BertModel and is left out).
/// `config` must describe `encoder`'s architecture (ConfigError otherwise). Creates `folder` if needed.
void save_bert_encoder(const BertEncoder& encoder, const BertConfig& config, const std::filesystem::path& folder);

}  // namespace xmc
