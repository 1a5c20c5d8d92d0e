#pragma once
// Engine-internal (includes torch). AdamW whose update of a CPU float32 parameter is one pass over the
// parameter, its gradient and both moments, where LibTorch's AdamW makes eight whole-tensor passes and two
// temporaries per parameter (for a bag-of-words embedding table: most of the optimiser's time, and every
// temporary a fresh allocation). The same arithmetic — decoupled weight decay, bias-corrected moments, eps
// added after the square root — the same options and the same state (AdamWParamState), so checkpoints load
// either way. A row-sparse gradient (a sparse COO tensor over the rows, as an embedding table with sparse
// gradients gives) is taken as is: the rows it names get their gradient, every other row a zero one, so
// the result is the dense update's without the dense gradient ever being built. Other parameters (CUDA,
// other dtypes, amsgrad) are updated as LibTorch's AdamW does, a sparse gradient made dense first.
#include <torch/torch.h>

#include <unordered_set>

namespace xmc {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;

  /// From now on the rows (first dimension) of `parameter` that a step gives no gradient keep their value and
  /// both moments, as torch's SparseAdam leaves them (with AdamW's decoupled weight decay on the rows it
  /// updates): a step costs the rows it touched, not the table. A row-sparse gradient names its rows; in a
  /// dense one, rows that are all zero count as untouched.
  void update_rows_lazily(const torch::Tensor& parameter);

 private:
  std::unordered_set<const void*> lazy_;  ///< TensorImpls of the parameters updated lazily
};

}  // namespace xmc
