#pragma once
// Engine-internal (includes torch). One pre-norm layer of a Qwen2 / Qwen3 / Llama decoder, as Hugging Face's
// Qwen2DecoderLayer computes it:
//   h = x + o_proj(attention(rope(q_norm?(q_proj(n))), rope(k_norm?(k_proj(n))), v_proj(n))),  n = RMSNorm(x)
//   y = h + down_proj(silu(gate_proj(m)) ⊙ up_proj(m)),                                         m = RMSNorm(h)
// attention: grouped-query (each of num_kv_heads key/value heads serves num_heads / num_kv_heads query heads),
// scaled by 1/√head_dim, under the additive mask it is given (causal + padding). RMSNorm's statistics are
// computed in float32 whatever the input's dtype. Parameter names follow Hugging Face's
// ("self_attn.q_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight").
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/model/activation_checkpoint.h"
#include "engine/model/decoder/decoder_config.h"
#include "engine/model/decoder/lora_linear.h"

namespace xmc {

/// Which projections carry adapters, and how they are made.
struct DecoderLoraPlan {
  LoraSpec spec;                      ///< rank 0 = none anywhere: every weight is a trained parameter
  std::vector<std::string> targets;   ///< of q, k, v, o, gate, up, down
  torch::ScalarType base_dtype = torch::kFloat;

  bool targets_projection(const std::string& name) const;
};

/// x · rsqrt(mean(x²) + eps) in float32, cast back, times the weight. With adapters the weight is frozen.
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(std::int64_t size, double eps, bool trainable, torch::Device device, torch::ScalarType dtype);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor& weight() { return weight_; }

 private:
  torch::Tensor weight_;
  double eps_;
};
TORCH_MODULE(RmsNorm);

/// cos and sin [L, head_dim] of rotary positions 0..L−1 (inv_freq = θ^(−2i/head_dim), halves repeated), in float32.
std::pair<torch::Tensor, torch::Tensor> rotary_tables(std::int64_t length, std::int64_t head_dim, double theta, torch::Device device);

class DecoderLayerImpl : public torch::nn::Module, public RecomputableBlock {
 public:
  DecoderLayerImpl(const DecoderConfig& config, const DecoderLoraPlan& lora, torch::Device device);

  /// x [B, L, hidden]; context = {cos [L, hd], sin [L, hd], additive mask [B, 1, L, L]}.
  torch::Tensor run(const torch::Tensor& x, const std::vector<torch::Tensor>& context) override;
  std::vector<torch::Tensor> trainable_parameters() override;

  /// Every base weight of the layer under its Hugging Face name (relative to the layer), parameters and frozen
  /// tensors alike: what loading fills and exporting writes.
  std::vector<std::pair<std::string, torch::Tensor*>> base_weights();
  /// The projections by their Hugging Face name ("self_attn.q_proj"), for adapters' merging.
  std::vector<std::pair<std::string, LoraLinear>> projections();

 private:
  std::int64_t num_heads_, num_kv_heads_, head_dim_;
  LoraLinear q_proj_{nullptr}, k_proj_{nullptr}, v_proj_{nullptr}, o_proj_{nullptr};
  LoraLinear gate_proj_{nullptr}, up_proj_{nullptr}, down_proj_{nullptr};
  RmsNorm input_norm_{nullptr}, post_attention_norm_{nullptr}, q_norm_{nullptr}, k_norm_{nullptr};
};
TORCH_MODULE(DecoderLayer);

}  // namespace xmc
