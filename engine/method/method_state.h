#pragma once
// Engine-internal (includes torch). What a method keeps in a checkpoint: its parameters and buffers (one
// module) and its own state beyond them. engine/method/checkpoint.h saves and loads a method through this.
#include <torch/torch.h>

#include <cstdint>

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
};

}  // namespace xmc
