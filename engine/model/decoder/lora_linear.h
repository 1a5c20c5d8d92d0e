#pragma once
// Engine-internal (includes torch). A linear projection y = x Wᵀ + b with an optional low-rank adapter
// (LoRA, Hu et al. 2021; rank-stabilised scaling, Kalajdzievski 2023):
//   y = x Wᵀ + b + s · dropout(x) Aᵀ Bᵀ,   A ∈ R^{r×in}, B ∈ R^{out×r},   s = α/√r (rsLoRA) or α/r
// A starts as PEFT's (Kaiming-uniform, a = √5), B at zero, so a fresh adapter leaves the base model as it was.
// With an adapter the base W and b are frozen: plain tensors, not registered, so they are neither optimised,
// exchanged between ranks nor written into checkpoints (the run keeps the base folder's path and hash); they
// may be held in bf16. Without one, W and b are the module's parameters, trained like any other.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/dropout.h"

namespace xmc {

struct LoraSpec {
  std::int64_t rank = 0;  ///< 0 = no adapter
  double alpha = 32;
  bool rslora = true;
  double dropout = 0.0;

  /// The factor s the adapter's product is scaled by.
  double scaling() const;
};

class LoraLinearImpl : public torch::nn::Module {
 public:
  /// W ~ N(0, init_std²), b = 0 (Hugging Face's initialisation of a decoder's projections), on `device`.
  /// `frozen`: W and b are frozen tensors held as `base_dtype` (always so with an adapter; a projection without
  /// one in a model with adapters elsewhere is frozen too).
  LoraLinearImpl(std::int64_t in, std::int64_t out, bool bias, const LoraSpec& lora, bool frozen, double init_std,
                 torch::Device device, torch::ScalarType base_dtype = torch::kFloat);

  torch::Tensor forward(const torch::Tensor& x);

  /// The base weight [out, in] and bias [out] (undefined without one): parameters or frozen tensors.
  torch::Tensor& weight() { return weight_; }
  torch::Tensor& bias() { return bias_; }
  bool has_adapter() const { return lora_.rank > 0; }
  torch::Tensor& lora_a() { return lora_a_; }
  torch::Tensor& lora_b() { return lora_b_; }
  /// W + s · B A, float32 on the CPU: the weight of the same projection with the adapter merged in.
  torch::Tensor merged_weight() const;

 private:
  torch::Tensor weight_, bias_, lora_a_, lora_b_;
  LoraSpec lora_;
  Dropout dropout_{nullptr};
};
TORCH_MODULE(LoraLinear);

}  // namespace xmc
