#include "engine/model/decoder/lora_linear.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/compat/torch_compat.h"

namespace xmc {

double LoraSpec::scaling() const {
  if (rank <= 0) return 0.0;
  return rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
}

LoraLinearImpl::LoraLinearImpl(std::int64_t in, std::int64_t out, bool bias, const LoraSpec& lora, bool frozen_base,
                               double init_std, torch::Device device, torch::ScalarType base_dtype)
    : lora_(lora) {
  if (lora.rank < 0) throw ConfigError("LoRA rank " + std::to_string(lora.rank) + " must be at least 0");
  const bool frozen = frozen_base || lora.rank > 0;
  const auto float_options = torch::TensorOptions().device(device).dtype(torch::kFloat);
  weight_ = torch::empty({out, in}, float_options).normal_(0.0, init_std);
  if (bias) bias_ = torch::zeros({out}, float_options);
  if (frozen) {
    weight_ = weight_.to(base_dtype);
    if (bias_.defined()) bias_ = bias_.to(base_dtype);
  } else {
    weight_ = register_parameter("weight", weight_);
    if (bias_.defined()) bias_ = register_parameter("bias", bias_);
  }
  if (lora.rank > 0) {
    lora_a_ = register_parameter("lora_A", torch::empty({lora.rank, in}, float_options));
    lora_b_ = register_parameter("lora_B", torch::zeros({out, lora.rank}, float_options));
    // PEFT's init of A: kaiming_uniform_(a=√5), i.e. U(−1/√in, 1/√in).
    torch::NoGradGuard no_grad;
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    lora_a_.uniform_(-bound, bound);
    dropout_ = register_module("lora_dropout", Dropout(lora.dropout));
  }
}

torch::Tensor LoraLinearImpl::forward(const torch::Tensor& x) {
  // Frozen bf16 weights meet an fp32 input outside autocast: the product runs in the input's dtype.
  const bool cast = weight_.scalar_type() != x.scalar_type() && !autocast_enabled(x.is_cuda());
  torch::Tensor y = torch::nn::functional::linear(x, cast ? weight_.to(x.scalar_type()) : weight_,
                                                  bias_.defined() && cast ? bias_.to(x.scalar_type()) : bias_);
  if (lora_.rank == 0) return y;
  const torch::Tensor low = torch::nn::functional::linear(dropout_(x), lora_a_);
  return y + torch::nn::functional::linear(low, lora_b_) * lora_.scaling();
}

torch::Tensor LoraLinearImpl::merged_weight() const {
  torch::NoGradGuard no_grad;
  torch::Tensor merged = weight_.detach().to(torch::kCPU, torch::kFloat);
  if (lora_.rank > 0) merged = merged + lora_b_.detach().to(torch::kCPU).matmul(lora_a_.detach().to(torch::kCPU)) * lora_.scaling();
  return merged;
}

}  // namespace xmc
