#include "engine/model/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "engine/core/error.h"

// LibTorch 2.4 made autocast device-generic (set_autocast_enabled(device_type, ...)) and deprecated the
// per-device setters that 1.13 has.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define XMC_AUTOCAST_DEVICE_GENERIC 1
#endif

namespace xmc {
namespace {

bool enabled(bool cuda) {
#ifdef XMC_AUTOCAST_DEVICE_GENERIC
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

torch::ScalarType dtype_of(bool cuda) {
#ifdef XMC_AUTOCAST_DEVICE_GENERIC
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

void set(bool cuda, bool on, torch::ScalarType dtype) {
#ifdef XMC_AUTOCAST_DEVICE_GENERIC
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
#else
  if (cuda) {
    at::autocast::set_enabled(on);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(on);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

}  // namespace

AutocastScope::AutocastScope(torch::Device device, torch::ScalarType dtype) {
  if (dtype == torch::kFloat) return;
  cuda_ = device.is_cuda();
  was_enabled_ = enabled(cuda_);
  previous_dtype_ = dtype_of(cuda_);
  set(cuda_, true, dtype);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Leaving the outermost scope drops the casts of the weights it cached.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set(cuda_, was_enabled_, previous_dtype_);
}

torch::ScalarType parse_precision(const std::string& value, const std::string& key) {
  if (value == "fp32") return torch::kFloat;
  if (value == "bf16") return torch::kBFloat16;
  if (value == "fp16") return torch::kHalf;
  throw ConfigError(key + ": got \"" + value + "\", expected fp32, bf16 or fp16");
}

}  // namespace xmc
