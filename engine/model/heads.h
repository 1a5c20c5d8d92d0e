#pragma once
// Engine-internal (includes torch). The heads on top of an encoder output (DESIGN.md section 2):
//   DE head  g1(x) = L2norm(Tanh(Dropout(Linear(x))))   dual-encoder embeddings (queries and labels)
//   CLF head g2(x) = Dropout(Linear(x))                  query side of the classifiers
#include <torch/torch.h>

#include "engine/model/dropout.h"

namespace xmc {

struct HeadOptions {
  HeadOptions(std::int64_t in, std::int64_t out) : in_dim(in), out_dim(out) {}
  std::int64_t in_dim;   ///< dΦ, the encoder's output size
  std::int64_t out_dim;  ///< d
  double dropout = 0.1;  ///< dropout before the non-linearity
};

class DualEncoderHeadImpl : public torch::nn::Module {
 public:
  explicit DualEncoderHeadImpl(const HeadOptions& options);
  /// [B, dΦ] -> [B, d], unit rows.
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Linear linear_{nullptr};
  Dropout dropout_{nullptr};
};
TORCH_MODULE(DualEncoderHead);

class ClassifierHeadImpl : public torch::nn::Module {
 public:
  explicit ClassifierHeadImpl(const HeadOptions& options);
  /// [B, dΦ] -> [B, d] (not normalised).
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Linear linear_{nullptr};
  Dropout dropout_{nullptr};
};
TORCH_MODULE(ClassifierHead);

}  // namespace xmc
