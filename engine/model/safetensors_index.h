#pragma once
// model.safetensors.index.json, which maps each tensor of a sharded Hugging Face checkpoint to its shard file
// (plain C++): {"metadata": {...}, "weight_map": {"model.norm.weight": "model-00002-of-00002.safetensors", ...}}.
#include <map>
#include <string>

namespace xmc {

/// Tensor name -> shard file name. Throws InputError naming `source` for bad JSON, a missing weight_map, or a
/// shard name that is not a plain file name of the model's folder (empty, ".", "..", or with a '/').
std::map<std::string, std::string> parse_safetensors_index(const std::string& json_text, const std::string& source);

}  // namespace xmc
