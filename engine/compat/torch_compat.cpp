#include "engine/compat/torch_compat.h"

#include <ATen/autocast_mode.h>

namespace xmc {

#if XMC_TORCH_AT_LEAST(2, 4)

bool autocast_enabled(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }

torch::ScalarType autocast_dtype(bool cuda) { return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU); }

void set_autocast(bool cuda, bool enabled, torch::ScalarType dtype) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, enabled);
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
}

#else

bool autocast_enabled(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }

torch::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}

void set_autocast(bool cuda, bool enabled, torch::ScalarType dtype) {
  if (cuda) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}

#endif

}  // namespace xmc
