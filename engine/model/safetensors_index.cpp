#include "engine/model/safetensors_index.h"

#include <nlohmann/json.hpp>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"

namespace xmc {

std::map<std::string, std::string> parse_safetensors_index(const std::string& json_text, const std::string& source) {
  nlohmann::json json;
  try {
    json = parse_bounded_json(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(source, std::string("bad JSON: ") + e.what());
  }
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object())
    throw InputError(source, "no \"weight_map\" object of tensor name -> shard file");
  std::map<std::string, std::string> shards;
  for (const auto& [name, file] : json["weight_map"].items()) {
    if (!file.is_string()) throw InputError(source, "weight_map[\"" + name + "\"] is not a file name");
    const std::string shard = file.get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos || shard == "." || shard == "..")
      throw InputError(source, "weight_map[\"" + name + "\"] names \"" + shard + "\", not a file of the model's folder");
    shards.emplace(name, shard);
  }
  return shards;
}

}  // namespace xmc
