#pragma once
// Engine-internal (includes torch). The default random generators a forward on a device draws from, captured and
// put back, so that a forward replayed for its gradient (gradient caching, activation checkpointing) draws the same
// dropout masks. On the CPU every mask follows LibTorch's default CPU generator (xmc::dropout); on a GPU LibTorch's
// dropout draws from that GPU's own default generator, so a replay there must put both back.
#include <torch/torch.h>

namespace xmc {

class RandomState {
 public:
  /// The default CPU generator's state and, for any other device, that device's default generator's.
  static RandomState of(torch::Device device);
  /// A state captured before: `device_state` undefined for the CPU.
  RandomState(torch::Device device, torch::Tensor cpu_state, torch::Tensor device_state);

  /// Sets every captured generator back to its captured state.
  void restore() const;

  const torch::Tensor& cpu_state() const { return cpu_; }
  const torch::Tensor& device_state() const { return device_state_; }

 private:
  torch::Device device_;
  torch::Tensor cpu_;
  torch::Tensor device_state_;
};

}  // namespace xmc
