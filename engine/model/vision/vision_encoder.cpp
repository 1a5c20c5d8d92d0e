#include "engine/model/vision/vision_encoder.h"

#include "engine/core/error.h"
#include "engine/model/hf_weights.h"
#include "engine/model/attention.h"

namespace xmc {
namespace {

std::vector<std::int64_t> shape_of(const torch::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

/// Every weight's name and shape, Hugging Face's names without the model prefix.
std::vector<std::pair<std::string, std::vector<std::int64_t>>> layout(const VisionConfig& c) {
  const std::int64_t h = c.hidden_size, f = c.intermediate_size, p = c.patch_size;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
  auto linear = [&](const std::string& name, std::int64_t in, std::int64_t o, bool bias = true) {
    out.push_back({name + ".weight", {o, in}});
    if (bias) out.push_back({name + ".bias", {o}});
  };
  auto norm = [&](const std::string& name) {
    out.push_back({name + ".weight", {h}});
    out.push_back({name + ".bias", {h}});
  };
  if (c.family == VisionFamily::vit) {
    out.push_back({"embeddings.cls_token", {1, 1, h}});
    out.push_back({"embeddings.position_embeddings", {1, c.patches() + 1, h}});
    out.push_back({"embeddings.patch_embeddings.projection.weight", {h, c.num_channels, p, p}});
    out.push_back({"embeddings.patch_embeddings.projection.bias", {h}});
    for (std::int64_t i = 0; i < c.num_layers; ++i) {
      const std::string l = "encoder.layer." + std::to_string(i) + ".";
      norm(l + "layernorm_before");
      for (const char* part : {"query", "key", "value"}) linear(l + "attention.attention." + part, h, h, c.qkv_bias);
      linear(l + "attention.output.dense", h, h);
      norm(l + "layernorm_after");
      linear(l + "intermediate.dense", h, f);
      linear(l + "output.dense", f, h);
    }
    norm("layernorm");
  } else {
    out.push_back({"embeddings.patch_embedding.weight", {h, c.num_channels, p, p}});
    out.push_back({"embeddings.patch_embedding.bias", {h}});
    out.push_back({"embeddings.position_embedding.weight", {c.patches(), h}});
    for (std::int64_t i = 0; i < c.num_layers; ++i) {
      const std::string l = "encoder.layers." + std::to_string(i) + ".";
      norm(l + "layer_norm1");
      for (const char* part : {"q_proj", "k_proj", "v_proj", "out_proj"}) linear(l + "self_attn." + part, h, h);
      norm(l + "layer_norm2");
      linear(l + "mlp.fc1", h, f);
      linear(l + "mlp.fc2", f, h);
    }
    norm("post_layernorm");
    out.push_back({"head.probe", {1, 1, h}});
    out.push_back({"head.attention.in_proj_weight", {3 * h, h}});
    out.push_back({"head.attention.in_proj_bias", {3 * h}});
    linear("head.attention.out_proj", h, h);
    norm("head.layernorm");
    linear("head.mlp.fc1", h, f);
    linear("head.mlp.fc2", f, h);
  }
  return out;
}

bool is_norm_weight(const std::string& name) {
  return (name.find("norm") != std::string::npos) && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
}

}  // namespace

VisionEncoder::VisionEncoder(const VisionConfig& config, torch::Device device, std::uint64_t seed) : config_(config), device_(device) {
  config_.validate("vision config");
  torch::NoGradGuard no_grad;
  auto generator = at::detail::createCPUGenerator(seed);
  for (const auto& [name, shape] : layout(config_)) {
    torch::Tensor t;
    const bool bias = name.size() > 5 && (name.compare(name.size() - 5, 5, ".bias") == 0 || name.find("in_proj_bias") != std::string::npos);
    if (is_norm_weight(name)) t = torch::ones(shape);
    else if (bias) t = torch::zeros(shape);
    else t = at::normal(0.0, 0.02, shape, generator);
    weights_[name] = t.to(device_);
  }
}

VisionEncoder VisionEncoder::load(const std::filesystem::path& folder, torch::Device device) {
  const VisionConfig config = read_vision_config(folder / "config.json");
  const HfWeights weights = HfWeights::open(folder);
  VisionEncoder encoder(config, torch::kCPU);
  const std::vector<std::string> prefixes = config.family == VisionFamily::vit ? std::vector<std::string>{"", "vit."}
                                                                                : std::vector<std::string>{"vision_model.", "", "model.vision_model."};
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : encoder.weights_) {
    const SafetensorsFile* file = nullptr;
    const TensorInfo* info = nullptr;
    for (const auto& prefix : prefixes)
      if ((info = weights.find(prefix + name, &file)) != nullptr) break;
    if (info == nullptr)
      throw InputError(weights.source().string(), "tensor '" + prefixes.front() + name + "' (shape " + format_shape(shape_of(tensor)) + ") is missing");
    if (info->shape != shape_of(tensor))
      throw InputError(file->path().string(), "tensor '" + info->name + "' has shape " + format_shape(info->shape) + " but " +
                                                  (folder / "config.json").string() + " needs " + format_shape(shape_of(tensor)));
    tensor = safetensors_tensor(*file, *info, torch::kFloat).to(device);
  }
  encoder.device_ = device;
  return encoder;
}

const torch::Tensor& VisionEncoder::w(const std::string& name) const { return weights_.at(name); }

torch::Tensor VisionEncoder::linear(const torch::Tensor& x, const std::string& prefix) const {
  const auto bias = weights_.find(prefix + ".bias");
  return torch::nn::functional::linear(x, w(prefix + ".weight"), bias == weights_.end() ? torch::Tensor() : bias->second);
}

torch::Tensor VisionEncoder::layer_norm(const torch::Tensor& x, const std::string& prefix) const {
  return torch::layer_norm(x, {config_.hidden_size}, w(prefix + ".weight"), w(prefix + ".bias"), config_.layer_norm_eps);
}

torch::Tensor VisionEncoder::attention(const torch::Tensor& queries, const torch::Tensor& keys, const torch::Tensor& q_weight, const torch::Tensor& q_bias,
                                       const torch::Tensor& k_weight, const torch::Tensor& k_bias, const torch::Tensor& v_weight,
                                       const torch::Tensor& v_bias) const {
  const std::int64_t batch = queries.size(0), heads = config_.num_heads, head_dim = config_.hidden_size / heads;
  auto split = [&](const torch::Tensor& t) { return t.view({batch, t.size(1), heads, head_dim}).transpose(1, 2); };
  const torch::Tensor q = split(torch::nn::functional::linear(queries, q_weight, q_bias));
  const torch::Tensor k = split(torch::nn::functional::linear(keys, k_weight, k_bias));
  const torch::Tensor v = split(torch::nn::functional::linear(keys, v_weight, v_bias));
  const torch::Tensor no_mask = torch::zeros({1, 1, 1, keys.size(1)}, q.options());
  return scaled_dot_product_attention(q, k, v, no_mask, 0.0).transpose(1, 2).reshape({batch, queries.size(1), config_.hidden_size});
}

torch::Tensor VisionEncoder::embed(const torch::Tensor& pixels) const {
  TORCH_CHECK(pixels.dim() == 4 && pixels.size(1) == config_.num_channels && pixels.size(2) == config_.image_size && pixels.size(3) == config_.image_size,
              "VisionEncoder::embed: pixels must be [B, ", config_.num_channels, ", ", config_.image_size, ", ", config_.image_size, "]");
  torch::NoGradGuard no_grad;
  const torch::Tensor input = pixels.to(device_, torch::kFloat);
  const std::int64_t batch = input.size(0);
  auto gelu = [&](const torch::Tensor& t) { return config_.gelu_tanh ? torch::gelu(t, "tanh") : torch::gelu(t); };
  const bool vit = config_.family == VisionFamily::vit;
  const std::string patch = vit ? "embeddings.patch_embeddings.projection" : "embeddings.patch_embedding";
  torch::Tensor x = torch::conv2d(input, w(patch + ".weight"), w(patch + ".bias"), config_.patch_size).flatten(2).transpose(1, 2);  // [B, N, H]
  if (vit) {
    x = torch::cat({w("embeddings.cls_token").expand({batch, 1, config_.hidden_size}), x}, 1) + w("embeddings.position_embeddings");
  } else {
    x = x + w("embeddings.position_embedding.weight").unsqueeze(0);
  }
  for (std::int64_t i = 0; i < config_.num_layers; ++i) {
    if (vit) {
      const std::string l = "encoder.layer." + std::to_string(i) + ".";
      const torch::Tensor normed = layer_norm(x, l + "layernorm_before");
      const std::string a = l + "attention.attention.";
      auto bias = [&](const std::string& n) {
        const auto it = weights_.find(n);
        return it == weights_.end() ? torch::Tensor() : it->second;
      };
      const torch::Tensor context = attention(normed, normed, w(a + "query.weight"), bias(a + "query.bias"), w(a + "key.weight"), bias(a + "key.bias"),
                                              w(a + "value.weight"), bias(a + "value.bias"));
      x = x + linear(context, l + "attention.output.dense");
      x = x + linear(gelu(linear(layer_norm(x, l + "layernorm_after"), l + "intermediate.dense")), l + "output.dense");
    } else {
      const std::string l = "encoder.layers." + std::to_string(i) + ".";
      const torch::Tensor normed = layer_norm(x, l + "layer_norm1");
      const std::string a = l + "self_attn.";
      const torch::Tensor context = attention(normed, normed, w(a + "q_proj.weight"), w(a + "q_proj.bias"), w(a + "k_proj.weight"), w(a + "k_proj.bias"),
                                              w(a + "v_proj.weight"), w(a + "v_proj.bias"));
      x = x + linear(context, a + "out_proj");
      x = x + linear(gelu(linear(layer_norm(x, l + "layer_norm2"), l + "mlp.fc1")), l + "mlp.fc2");
    }
  }
  if (vit) return layer_norm(x, "layernorm").select(1, 0).contiguous();
  x = layer_norm(x, "post_layernorm");
  // The attention-pooling head: nn.MultiheadAttention(probe, x, x) with its packed in-projection, then a residual MLP.
  const std::int64_t h = config_.hidden_size;
  const torch::Tensor& in_w = w("head.attention.in_proj_weight");
  const torch::Tensor& in_b = w("head.attention.in_proj_bias");
  const torch::Tensor probe = w("head.probe").expand({batch, 1, h});
  torch::Tensor pooled = attention(probe, x, in_w.narrow(0, 0, h), in_b.narrow(0, 0, h), in_w.narrow(0, h, h), in_b.narrow(0, h, h), in_w.narrow(0, 2 * h, h),
                                   in_b.narrow(0, 2 * h, h));
  pooled = linear(pooled, "head.attention.out_proj");
  pooled = pooled + linear(gelu(linear(layer_norm(pooled, "head.layernorm"), "head.mlp.fc1")), "head.mlp.fc2");
  return pooled.select(1, 0).contiguous();
}

}  // namespace xmc
