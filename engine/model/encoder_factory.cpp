#include "engine/model/encoder_factory.h"

#include "engine/core/error.h"

namespace xmc {

torch::Device parse_device(const std::string& device) {
  try {
    torch::Device d(device);
    if (d.is_cuda() && !torch::cuda::is_available())
      throw ConfigError("device: \"" + device + "\" was asked for but this LibTorch has no usable CUDA device; use device=cpu");
    return d;
  } catch (const c10::Error&) {
    throw ConfigError("device: \"" + device + "\" is not a torch device (cpu, cuda, cuda:N)");
  }
}

}  // namespace xmc
