#pragma once
// Engine-internal (includes torch). IRENE's classifier generator: from a label's zero-shot embedding e_l
// and the classifiers w_n of its K nearest observed labels (similarities s_n), a classifier u_l.
//   weighted_sum   u_l = norm(e_l + Σ_n a_n w_n),  a = softmax(s / T)       (EMMETT's training-free synthesis)
//   transformer    u_l = norm(weighted_sum + P(pool(Layer([e_l + t_enc, w_n + t_clf + S[bucket(s_n)], ...]))))
// One transformer encoder layer over the K + 1 tokens, mean-pooled; the output projection P starts at zero,
// so the transformer starts as the weighted sum and learns only a correction.
#include <torch/torch.h>

#include <cstdint>

namespace xmc {

struct IreneGeneratorOptions {
  std::int64_t dim = 0;           ///< d of e, w and u
  bool transformer = true;        ///< false: the weighted sum alone (no parameters)
  std::int64_t heads = 4;         ///< divides dim; 0 = the most of 4, 2, 1 that does
  std::int64_t sim_buckets = 10;  ///< similarity embeddings S for buckets of [-1, 1]
  double temperature = 0.1;       ///< T of the neighbour weights
};

class IreneGeneratorImpl : public torch::nn::Module {
 public:
  explicit IreneGeneratorImpl(IreneGeneratorOptions options);

  /// e [n x d], w [n x K x d], s [n x K] -> u [n x d] (unit rows).
  torch::Tensor forward(const torch::Tensor& e, const torch::Tensor& w, const torch::Tensor& s);
  /// The training-free synthesis, whatever the generator's type.
  torch::Tensor weighted_sum(const torch::Tensor& e, const torch::Tensor& w, const torch::Tensor& s) const;
  /// Makes the transformer the weighted sum again (its output projection back to zero).
  void reset_to_weighted_sum();
  const IreneGeneratorOptions& options() const { return options_; }

 private:
  IreneGeneratorOptions options_;
  torch::nn::TransformerEncoderLayer layer_{nullptr};
  torch::nn::Linear out_{nullptr};
  torch::nn::Embedding sim_embedding_{nullptr};
  torch::Tensor type_encoding_, type_classifier_;
};
TORCH_MODULE(IreneGenerator);

}  // namespace xmc
