#include "engine/model/decoder/decoder_layer.h"

#include <algorithm>
#include <cmath>

#include "engine/model/attention.h"

namespace xmc {
namespace {

constexpr double kInitStd = 0.02;  // Hugging Face initializer_range

std::shared_ptr<torch::nn::Module> make_container(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

}  // namespace

bool DecoderLoraPlan::targets_projection(const std::string& name) const {
  return spec.rank > 0 && std::find(targets.begin(), targets.end(), name) != targets.end();
}

RmsNormImpl::RmsNormImpl(std::int64_t size, double eps, bool trainable, torch::Device device, torch::ScalarType dtype) : eps_(eps) {
  weight_ = torch::ones({size}, torch::TensorOptions().device(device).dtype(trainable ? torch::kFloat : dtype));
  if (trainable) weight_ = register_parameter("weight", weight_);
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  const torch::Tensor x32 = x.to(torch::kFloat);
  const torch::Tensor normed = (x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_)).to(x.scalar_type());
  // Hugging Face: weight * normed.to(input dtype), which promotes to the weight's dtype.
  return weight_.scalar_type() == x.scalar_type() || weight_.scalar_type() == torch::kFloat ? weight_ * normed
                                                                                           : weight_.to(x.scalar_type()) * normed;
}

std::pair<torch::Tensor, torch::Tensor> rotary_tables(std::int64_t length, std::int64_t head_dim, double theta, torch::Device device) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const torch::Tensor exponents = torch::arange(0, head_dim, 2, torch::TensorOptions().dtype(torch::kLong).device(device)).to(torch::kFloat) /
                                  static_cast<double>(head_dim);
  const torch::Tensor inv_freq = 1.0 / torch::pow(torch::full({}, theta, f32), exponents);
  const torch::Tensor freqs = torch::outer(torch::arange(length, f32), inv_freq);  // [L, hd/2]
  const torch::Tensor angles = torch::cat({freqs, freqs}, -1);                      // [L, hd]
  return {angles.cos(), angles.sin()};
}

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const std::int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

/// Rotary positions on [B, heads, L, hd] with tables [L, hd] (cast to x's dtype, as Hugging Face does).
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const torch::Tensor c = cos.to(x.scalar_type()), s = sin.to(x.scalar_type());
  return x * c + rotate_half(x) * s;
}

}  // namespace

DecoderLayerImpl::DecoderLayerImpl(const DecoderConfig& config, const DecoderLoraPlan& lora, torch::Device device)
    : num_heads_(config.num_heads), num_kv_heads_(config.num_kv_heads), head_dim_(config.head_dim) {
  const std::int64_t h = config.hidden_size, q = config.num_heads * config.head_dim, kv = config.num_kv_heads * config.head_dim;
  const bool frozen = lora.spec.rank > 0;
  auto projection = [&](torch::nn::Module& parent, const std::string& name, const std::string& target, std::int64_t in,
                        std::int64_t out, bool bias) {
    LoraSpec spec = lora.spec;
    if (!lora.targets_projection(target)) spec.rank = 0;
    return parent.register_module(name, LoraLinear(in, out, bias, spec, frozen, kInitStd, device, lora.base_dtype));
  };
  auto attention = make_container(*this, "self_attn");
  q_proj_ = projection(*attention, "q_proj", "q", h, q, config.qkv_bias);
  k_proj_ = projection(*attention, "k_proj", "k", h, kv, config.qkv_bias);
  v_proj_ = projection(*attention, "v_proj", "v", h, kv, config.qkv_bias);
  o_proj_ = projection(*attention, "o_proj", "o", q, h, config.o_bias);
  if (config.qk_norm) {
    q_norm_ = attention->register_module("q_norm", RmsNorm(config.head_dim, config.rms_norm_eps, !frozen, device, lora.base_dtype));
    k_norm_ = attention->register_module("k_norm", RmsNorm(config.head_dim, config.rms_norm_eps, !frozen, device, lora.base_dtype));
  }
  auto mlp = make_container(*this, "mlp");
  gate_proj_ = projection(*mlp, "gate_proj", "gate", h, config.intermediate_size, config.mlp_bias);
  up_proj_ = projection(*mlp, "up_proj", "up", h, config.intermediate_size, config.mlp_bias);
  down_proj_ = projection(*mlp, "down_proj", "down", config.intermediate_size, h, config.mlp_bias);
  input_norm_ = register_module("input_layernorm", RmsNorm(h, config.rms_norm_eps, !frozen, device, lora.base_dtype));
  post_attention_norm_ = register_module("post_attention_layernorm", RmsNorm(h, config.rms_norm_eps, !frozen, device, lora.base_dtype));
}

torch::Tensor DecoderLayerImpl::run(const torch::Tensor& x, const std::vector<torch::Tensor>& context) {
  const torch::Tensor& cos = context.at(0);
  const torch::Tensor& sin = context.at(1);
  const torch::Tensor& mask = context.at(2);
  const std::int64_t batch = x.size(0), length = x.size(1);

  const torch::Tensor n = input_norm_(x);
  torch::Tensor q = q_proj_(n).view({batch, length, num_heads_, head_dim_});
  torch::Tensor k = k_proj_(n).view({batch, length, num_kv_heads_, head_dim_});
  torch::Tensor v = v_proj_(n).view({batch, length, num_kv_heads_, head_dim_});
  if (!q_norm_.is_empty()) {
    q = q_norm_(q);
    k = k_norm_(k);
  }
  q = apply_rotary(q.transpose(1, 2), cos, sin);  // [B, heads, L, hd]
  k = apply_rotary(k.transpose(1, 2), cos, sin);
  v = v.transpose(1, 2);
  if (num_kv_heads_ != num_heads_) {  // each key/value head serves a group of query heads
    const std::int64_t group = num_heads_ / num_kv_heads_;
    k = k.unsqueeze(2).expand({batch, num_kv_heads_, group, length, head_dim_}).reshape({batch, num_heads_, length, head_dim_});
    v = v.unsqueeze(2).expand({batch, num_kv_heads_, group, length, head_dim_}).reshape({batch, num_heads_, length, head_dim_});
  }
  const torch::Tensor attended = scaled_dot_product_attention(q, k, v.to(q.scalar_type()), mask.to(q.scalar_type()), 0.0);
  const torch::Tensor h = x + o_proj_(attended.transpose(1, 2).reshape({batch, length, num_heads_ * head_dim_}));

  const torch::Tensor m = post_attention_norm_(h);
  return h + down_proj_(torch::silu(gate_proj_(m)) * up_proj_(m));
}

std::vector<torch::Tensor> DecoderLayerImpl::trainable_parameters() {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, torch::Tensor*>> DecoderLayerImpl::base_weights() {
  std::vector<std::pair<std::string, torch::Tensor*>> out;
  for (auto& [name, projection] : projections()) {
    out.emplace_back(name + ".weight", &projection->weight());
    if (projection->bias().defined()) out.emplace_back(name + ".bias", &projection->bias());
  }
  if (!q_norm_.is_empty()) {
    out.emplace_back("self_attn.q_norm.weight", &q_norm_->weight());
    out.emplace_back("self_attn.k_norm.weight", &k_norm_->weight());
  }
  out.emplace_back("input_layernorm.weight", &input_norm_->weight());
  out.emplace_back("post_attention_layernorm.weight", &post_attention_norm_->weight());
  return out;
}

std::vector<std::pair<std::string, LoraLinear>> DecoderLayerImpl::projections() {
  return {{"self_attn.q_proj", q_proj_}, {"self_attn.k_proj", k_proj_}, {"self_attn.v_proj", v_proj_},
          {"self_attn.o_proj", o_proj_}, {"mlp.gate_proj", gate_proj_}, {"mlp.up_proj", up_proj_},
          {"mlp.down_proj", down_proj_}};
}

}  // namespace xmc
