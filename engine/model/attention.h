#pragma once
// Engine-internal (includes torch). The attention every transformer encoder here runs.
#include <torch/torch.h>

namespace xmc {

/// softmax(q·kᵀ/√head_dim + additive_mask)·v over [B, heads, L, head_dim] tensors, with dropout p on the
/// attention probabilities. LibTorch 2.x runs it as one fused kernel (flash / memory-efficient attention on a
/// GPU); 1.13 has no such kernel and composes it (with the engine's dropout, model/dropout.h).
torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                           const torch::Tensor& additive_mask, double dropout_p);

}  // namespace xmc
