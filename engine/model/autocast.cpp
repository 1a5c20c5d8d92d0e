#include "engine/model/autocast.h"

#include <ATen/autocast_mode.h>

#include "engine/core/error.h"
#include "engine/compat/torch_compat.h"

namespace xmc {

AutocastScope::AutocastScope(torch::Device device, torch::ScalarType dtype) {
  if (dtype == torch::kFloat) return;
  cuda_ = device.is_cuda();
  was_enabled_ = autocast_enabled(cuda_);
  previous_dtype_ = autocast_dtype(cuda_);
  set_autocast(cuda_, true, dtype);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Leaving the outermost scope drops the casts of the weights it cached.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(cuda_, was_enabled_, previous_dtype_);
}

torch::ScalarType parse_precision(const std::string& value, const std::string& key) {
  if (value == "fp32") return torch::kFloat;
  if (value == "bf16") return torch::kBFloat16;
  if (value == "fp16") return torch::kHalf;
  throw ConfigError(key + ": got \"" + value + "\", expected fp32, bf16 or fp16");
}

}  // namespace xmc
