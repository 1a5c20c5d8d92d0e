#pragma once
// Engine-internal (includes torch). Mixed precision for an encoder's forward: inside an AutocastScope, LibTorch
// runs matrix products and the like in bf16 (or fp16) on `device` while parameters, optimiser state and
// everything outside the scope (scores, losses) stay fp32. How autocast is switched differs between LibTorch
// versions: engine/compat/torch_compat.h bridges that.
#include <torch/torch.h>

namespace xmc {

class AutocastScope {
 public:
  /// Enables autocast to `dtype` on `device`'s type (cpu or cuda) until the scope ends, restoring what was
  /// set before. kFloat: no autocast at all (the scope does nothing).
  AutocastScope(torch::Device device, torch::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  torch::ScalarType previous_dtype_ = torch::kFloat;
};

/// "fp32" -> kFloat, "bf16" -> kBFloat16, "fp16" -> kHalf; anything else throws ConfigError naming `key`.
torch::ScalarType parse_precision(const std::string& value, const std::string& key);

}  // namespace xmc
