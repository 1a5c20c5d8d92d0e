#include "engine/model/random_state.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>
#include <utility>

namespace xmc {
namespace {

torch::Tensor state_of(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_state(at::Generator generator, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

RandomState RandomState::of(torch::Device device) {
  return {device, state_of(at::detail::getDefaultCPUGenerator()), device.is_cpu() ? torch::Tensor() : state_of(at::globalContext().defaultGenerator(device))};
}

RandomState::RandomState(torch::Device device, torch::Tensor cpu_state, torch::Tensor device_state)
    : device_(device), cpu_(std::move(cpu_state)), device_state_(std::move(device_state)) {}

void RandomState::restore() const {
  set_state(at::detail::getDefaultCPUGenerator(), cpu_);
  if (device_state_.defined()) set_state(at::globalContext().defaultGenerator(device_), device_state_);
}

}  // namespace xmc
