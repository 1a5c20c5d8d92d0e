#include "engine/model/hf_weights.h"

#include <cstring>

#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/model/safetensors_index.h"

namespace xmc {

torch::Tensor safetensors_tensor(const SafetensorsFile& file, const TensorInfo& info, torch::ScalarType dtype) {
  torch::ScalarType type;
  switch (info.dtype) {
    case SafeDtype::F32: type = torch::kFloat; break;
    case SafeDtype::F16: type = torch::kHalf; break;
    case SafeDtype::BF16: type = torch::kBFloat16; break;
    case SafeDtype::F64: type = torch::kDouble; break;
    default:
      throw InputError(file.path().string(), "tensor '" + info.name + "' has dtype " + std::string(safe_dtype_name(info.dtype)) +
                                                 "; a floating-point dtype (F32, F16, BF16, F64) is needed");
  }
  torch::Tensor raw = torch::empty(info.shape, torch::TensorOptions().dtype(type));
  const auto bytes = file.data(info);
  if (!bytes.empty()) std::memcpy(raw.data_ptr(), bytes.data(), bytes.size());
  return raw.to(dtype);
}

bool HfWeights::present(const std::filesystem::path& folder) {
  return std::filesystem::exists(folder / "model.safetensors") || std::filesystem::exists(folder / "model.safetensors.index.json");
}

HfWeights HfWeights::open(const std::filesystem::path& folder) {
  HfWeights weights;
  const auto single = folder / "model.safetensors";
  const auto index = folder / "model.safetensors.index.json";
  if (std::filesystem::exists(single)) {
    weights.source_ = single;
    weights.files_.push_back(SafetensorsFile::open(single));
    return weights;
  }
  if (!std::filesystem::exists(index)) {
    const bool has_bin = std::filesystem::exists(folder / "pytorch_model.bin");
    throw InputError(single.string(), has_bin ? "missing; only safetensors weights are read (convert pytorch_model.bin with "
                                                "transformers' save_pretrained(..., safe_serialization=True))"
                                              : "missing, and no model.safetensors.index.json of shards either");
  }
  weights.source_ = index;
  std::map<std::string, std::size_t> file_number;
  for (const auto& [name, shard] : parse_safetensors_index(read_whole_file(index), index.string())) {
    auto [at, inserted] = file_number.emplace(shard, weights.files_.size());
    if (inserted) {
      const auto path = folder / shard;
      if (!std::filesystem::exists(path))
        throw InputError(path.string(), "missing: model.safetensors.index.json puts tensor '" + name + "' in it");
      weights.files_.push_back(SafetensorsFile::open(path));
    }
    if (weights.files_[at->second].find(name) == nullptr)
      throw InputError((folder / shard).string(), "has no tensor '" + name + "', which model.safetensors.index.json puts there");
    weights.shard_of_[name] = at->second;
  }
  return weights;
}

const TensorInfo* HfWeights::find(const std::string& name, const SafetensorsFile** file) const {
  if (shard_of_.empty()) {
    if (files_.empty()) return nullptr;
    *file = &files_.front();
    return files_.front().find(name);
  }
  const auto at = shard_of_.find(name);
  if (at == shard_of_.end()) return nullptr;
  *file = &files_[at->second];
  return files_[at->second].find(name);
}

std::vector<std::filesystem::path> HfWeights::files() const {
  std::vector<std::filesystem::path> out;
  for (const auto& file : files_) out.push_back(file.path());
  return out;
}

}  // namespace xmc
