#pragma once
// Engine-internal (includes torch). What a method keeps in a checkpoint: its parameters and buffers (one
// module) and its own state beyond them. engine/method/checkpoint.h saves and loads a method through this.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace xmc {

class MethodState {
 public:
  virtual ~MethodState() = default;

  /// Every parameter and buffer, as saved in checkpoints.
  virtual torch::nn::Module& module() = 0;
  /// The method's own state beyond the module's parameters (shortlists, classifier shapes). load_state()
  /// is called before the parameters are loaded, so it can shape the model first.
  virtual void save_state(torch::serialize::OutputArchive& archive) const = 0;
  virtual void load_state(torch::serialize::InputArchive& archive, std::int64_t num_labels) = 0;
  /// Tensors of that state which an evaluation between epochs never reads (hard-negative shortlists): the trainer
  /// may write them to a file and free them while it evaluates, and reads them back in place after.
  virtual std::vector<torch::Tensor> idle_during_evaluation() const { return {}; }
};

}  // namespace xmc
