#pragma once
// Engine-internal (includes torch). AdamW whose update of a CPU float32 parameter is one pass over the
// parameter, its gradient and both moments, where LibTorch's AdamW makes eight whole-tensor passes and two
// temporaries per parameter (for a bag-of-words embedding table: most of the optimiser's time, and every
// temporary a fresh allocation). The same arithmetic — decoupled weight decay, bias-corrected moments, eps
// added after the square root — the same options and the same state (AdamWParamState), so checkpoints load
// either way. Other parameters (CUDA, other dtypes, amsgrad) are updated as LibTorch's AdamW does.
#include <torch/torch.h>

namespace xmc {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace xmc
