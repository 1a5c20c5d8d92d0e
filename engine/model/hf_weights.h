#pragma once
// Engine-internal (includes torch). The weights of a local Hugging Face model folder: `model.safetensors`, or
// the shards `model.safetensors.index.json` maps each tensor name to. Files are memory-mapped; a tensor is
// copied out only when asked for.
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/safetensors_file.h"

namespace xmc {

/// A tensor's bytes as a CPU tensor of `dtype` (F32, F16, BF16 or F64 in the file; converted). Throws InputError
/// naming the file and the tensor for another dtype.
torch::Tensor safetensors_tensor(const SafetensorsFile& file, const TensorInfo& info, torch::ScalarType dtype = torch::kFloat);

class HfWeights {
 public:
  /// Whether `folder` holds weights: model.safetensors or model.safetensors.index.json.
  static bool present(const std::filesystem::path& folder);
  /// Opens them; throws InputError naming the file for a missing or malformed one (a shard the index names
  /// that is absent, an index that is not {"weight_map": {name: file}}), or only pytorch_model.bin present.
  static HfWeights open(const std::filesystem::path& folder);

  /// The tensor called `name`, or nullptr; `file` is set to the file holding it.
  const TensorInfo* find(const std::string& name, const SafetensorsFile** file) const;
  /// The files read, in a stable order (for content hashes).
  std::vector<std::filesystem::path> files() const;
  /// What to name in an error about a tensor: the single file, or the index.
  const std::filesystem::path& source() const { return source_; }

 private:
  std::filesystem::path source_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t> shard_of_;  ///< sharded: tensor name -> index into files_
};

}  // namespace xmc
