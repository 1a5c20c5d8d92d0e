#include "engine/model/vision/vision_config.h"

#include <nlohmann/json.hpp>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/model/hf_config_reader.h"

namespace xmc {

void VisionConfig::validate(const std::string& source) const {
  auto positive = [&](std::int64_t value, const char* key, std::int64_t most) {
    if (value <= 0 || value > most)
      throw ConfigError(source + ": key '" + key + "' must be 1 to " + std::to_string(most) + ", got " + std::to_string(value));
  };
  positive(hidden_size, "hidden_size", 16384);
  positive(num_layers, "num_hidden_layers", 256);
  positive(num_heads, "num_attention_heads", 256);
  positive(intermediate_size, "intermediate_size", 65536);
  positive(image_size, "image_size", 4096);
  positive(patch_size, "patch_size", 1024);
  positive(num_channels, "num_channels", 4);
  if (hidden_size % num_heads != 0)
    throw ConfigError(source + ": hidden_size " + std::to_string(hidden_size) + " is not a multiple of num_attention_heads " + std::to_string(num_heads));
  if (image_size % patch_size != 0)
    throw ConfigError(source + ": image_size " + std::to_string(image_size) + " is not a multiple of patch_size " + std::to_string(patch_size));
  if (!(layer_norm_eps > 0)) throw ConfigError(source + ": key 'layer_norm_eps' must be positive");
}

VisionConfig parse_vision_config(const std::string& json_text, const std::string& source) {
  const nlohmann::json json = parse_hf_config_object(json_text, source);
  const std::string type = json.contains("model_type") && json["model_type"].is_string() ? json["model_type"].get<std::string>() : "";
  VisionConfig config;
  nlohmann::json vision = json;
  if (type == "vit") {
    config.family = VisionFamily::vit;
  } else if (type == "siglip_vision_model") {
    config.family = VisionFamily::siglip;
  } else if (type == "siglip") {
    config.family = VisionFamily::siglip;
    if (!json.contains("vision_config") || !json["vision_config"].is_object())
      throw ConfigError(source + ": a siglip config.json needs its 'vision_config' object");
    vision = json["vision_config"];
  } else if (type == "siglip2") {
    throw ConfigError(source + ": model_type 'siglip2' is NaFlex (variable resolution), which is not read; fixed-resolution SigLIP2 "
                               "checkpoints (model_type 'siglip') are");
  } else {
    throw ConfigError(source + ": model_type '" + type + "' is not a vision encoder that is read (vit, siglip, siglip_vision_model)");
  }
  const HfConfigReader reader(vision, source);
  const bool vit = config.family == VisionFamily::vit;
  // SigLIP's vision_config lists only what differs from its defaults (SiglipVisionConfig: 768, 12, 12, 3072, 224, 16).
  config.hidden_size = reader.optional_int("hidden_size", 768);
  config.num_layers = reader.optional_int("num_hidden_layers", 12);
  config.num_heads = reader.optional_int("num_attention_heads", 12);
  config.intermediate_size = reader.optional_int("intermediate_size", 3072);
  config.image_size = reader.optional_int("image_size", 224);
  config.patch_size = reader.optional_int("patch_size", 16);
  config.num_channels = reader.optional_int("num_channels", 3);
  config.layer_norm_eps = reader.optional_double("layer_norm_eps", vit ? 1e-12 : 1e-6);
  const std::string act = reader.optional_string("hidden_act", vit ? "gelu" : "gelu_pytorch_tanh");
  if (act == "gelu") config.gelu_tanh = false;
  else if (act == "gelu_pytorch_tanh" || act == "gelu_new") config.gelu_tanh = true;
  else throw ConfigError(source + ": key 'hidden_act' names an unsupported activation '" + act + "' (gelu, gelu_pytorch_tanh)");
  config.qkv_bias = reader.optional_bool("qkv_bias", true);
  config.validate(source);
  return config;
}

VisionConfig read_vision_config(const std::filesystem::path& file) {
  return parse_vision_config(read_hf_config_text(file), file.string());
}

std::string vision_config_to_json(const VisionConfig& c) {
  nlohmann::ordered_json body = {{"hidden_size", c.hidden_size},      {"num_hidden_layers", c.num_layers}, {"num_attention_heads", c.num_heads},
                                 {"intermediate_size", c.intermediate_size}, {"image_size", c.image_size},   {"patch_size", c.patch_size},
                                 {"num_channels", c.num_channels},    {"layer_norm_eps", c.layer_norm_eps},
                                 {"hidden_act", c.gelu_tanh ? "gelu_pytorch_tanh" : "gelu"}};
  nlohmann::ordered_json json;
  if (c.family == VisionFamily::vit) {
    json = {{"architectures", {"ViTModel"}}, {"model_type", "vit"}};
    body["qkv_bias"] = c.qkv_bias;
  } else {
    json = {{"architectures", {"SiglipVisionModel"}}, {"model_type", "siglip_vision_model"}};
  }
  json.update(body);
  return json.dump(2) + "\n";
}

}  // namespace xmc
