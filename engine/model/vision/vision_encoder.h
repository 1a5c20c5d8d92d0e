#pragma once
// Engine-internal (includes torch). A frozen vision encoder that embeds images for image banks (ViXML's feature
// bank): ViT (Hugging Face's ViTModel: patch embedding, [CLS] + learned positions, pre-LayerNorm layers with exact
// GELU, a final LayerNorm; the [CLS] vector pooled) or SigLIP's vision tower (SiglipVisionModel: patch embedding
// and learned positions without [CLS], pre-LayerNorm layers with tanh GELU, a post-LayerNorm, and the attention
// pooling head: a learned probe attends over the patches, then LayerNorm and an MLP with a residual).
// Inference only: weights are plain tensors under their Hugging Face names, not trained parameters.
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

#include "engine/model/vision/vision_config.h"

namespace xmc {

class VisionEncoder {
 public:
  /// Random weights as Hugging Face initialises them (N(0, 0.02²) matrices and embeddings, zero biases, unit
  /// LayerNorms), for tests and benchmarks; `config` must validate.
  VisionEncoder(const VisionConfig& config, torch::Device device, std::uint64_t seed = 0);
  /// Loads `folder`/config.json and its weights (model.safetensors or shards; with or without the "vit." or
  /// "vision_model." prefix; F32/F16/BF16). A missing tensor or a wrong shape throws InputError naming the file,
  /// the tensor and both shapes.
  static VisionEncoder load(const std::filesystem::path& folder, torch::Device device);

  /// pixels [B, C, image_size, image_size] float32, normalised -> [B, hidden_size] float32.
  torch::Tensor embed(const torch::Tensor& pixels) const;

  const VisionConfig& config() const { return config_; }
  torch::Device device() const { return device_; }
  /// Every weight by its Hugging Face name without a prefix (what loading fills).
  std::map<std::string, torch::Tensor>& weights() { return weights_; }

 private:
  const torch::Tensor& w(const std::string& name) const;
  torch::Tensor linear(const torch::Tensor& x, const std::string& prefix) const;
  torch::Tensor layer_norm(const torch::Tensor& x, const std::string& prefix) const;
  torch::Tensor attention(const torch::Tensor& queries, const torch::Tensor& keys, const torch::Tensor& q_weight, const torch::Tensor& q_bias,
                          const torch::Tensor& k_weight, const torch::Tensor& k_bias, const torch::Tensor& v_weight, const torch::Tensor& v_bias) const;

  VisionConfig config_;
  torch::Device device_;
  std::map<std::string, torch::Tensor> weights_;
};

}  // namespace xmc
