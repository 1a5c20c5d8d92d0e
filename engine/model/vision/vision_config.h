#pragma once
// The architecture of a frozen vision encoder that makes image banks (plain C++), read from a Hugging Face
// config.json: ViT (ViTModel, e.g. google/vit-base-patch16-224-in21k: a [CLS] token, pre-LayerNorm layers, the
// final LayerNorm's [CLS] vector) or the SigLIP vision tower (SiglipVisionModel / the vision half of SiglipModel,
// which fixed-resolution SigLIP2 checkpoints share: no [CLS], post-LayerNorm, a multi-head attention-pooling head).
#include <cstdint>
#include <filesystem>
#include <string>

namespace xmc {

enum class VisionFamily { vit, siglip };

struct VisionConfig {
  VisionFamily family = VisionFamily::vit;
  std::int64_t hidden_size = 768;
  std::int64_t num_layers = 12;
  std::int64_t num_heads = 12;
  std::int64_t intermediate_size = 3072;
  std::int64_t image_size = 224;
  std::int64_t patch_size = 16;
  std::int64_t num_channels = 3;
  double layer_norm_eps = 1e-12;
  bool gelu_tanh = false;  ///< "gelu_pytorch_tanh" (SigLIP) rather than exact "gelu" (ViT)
  bool qkv_bias = true;

  std::int64_t patches() const { return (image_size / patch_size) * (image_size / patch_size); }
  std::string family_name() const { return family == VisionFamily::vit ? "vit" : "siglip"; }
  /// Throws ConfigError("SOURCE: ...") for a non-positive size, hidden_size not a multiple of the heads, an
  /// image size not a multiple of the patch size.
  void validate(const std::string& source) const;
};

/// Parses a ViT or SigLIP config.json: model_type "vit", "siglip_vision_model", or "siglip" (its vision_config).
/// "siglip2" (NaFlex, variable resolution) and other types are refused by name.
VisionConfig parse_vision_config(const std::string& json_text, const std::string& source);
VisionConfig read_vision_config(const std::filesystem::path& file);
/// A config.json text that parse_vision_config reads back (for random models in tests and benchmarks).
std::string vision_config_to_json(const VisionConfig& config);

}  // namespace xmc
