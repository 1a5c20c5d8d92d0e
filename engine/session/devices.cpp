#include "engine/session/devices.h"

namespace xmc {

std::vector<std::string> available_devices() {
  std::vector<std::string> devices{"cpu"};
  if (torch::cuda::is_available())
    for (std::size_t i = 0; i < torch::cuda::device_count(); ++i) devices.push_back("cuda:" + std::to_string(i));
  return devices;
}

}  // namespace xmc
