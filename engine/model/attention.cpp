#include "engine/model/attention.h"

#include <cmath>

#include "engine/compat/torch_compat.h"
#include "engine/model/dropout.h"

namespace xmc {

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                           const torch::Tensor& additive_mask, double dropout_p) {
#if XMC_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, additive_mask, dropout_p, /*is_causal=*/false);
#else
  const torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1))) + additive_mask;
  return torch::matmul(xmc::dropout(torch::softmax(scores, -1), dropout_p, dropout_p > 0), v);
#endif
}

}  // namespace xmc
