#include "engine/session/devices.h"

#include <torch/cuda.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

namespace xmc {
namespace {

std::string gibibytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

/// Name and memory of CUDA device `index` from the driver API (libcuda), or "" when it cannot say.
std::string cuda_description(int index) {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return {};
  using Init = int (*)(unsigned);
  using Get = int (*)(int*, int);
  using Name = int (*)(char*, int, int);
  using Memory = int (*)(std::size_t*, int);
  const auto init = reinterpret_cast<Init>(::dlsym(driver, "cuInit"));
  const auto get = reinterpret_cast<Get>(::dlsym(driver, "cuDeviceGet"));
  const auto name = reinterpret_cast<Name>(::dlsym(driver, "cuDeviceGetName"));
  const auto memory = reinterpret_cast<Memory>(::dlsym(driver, "cuDeviceTotalMem_v2"));
  std::string description;
  int device = 0;
  char text[256] = {};
  std::size_t bytes = 0;
  if (init != nullptr && get != nullptr && name != nullptr && memory != nullptr && init(0) == 0 && get(&device, index) == 0 &&
      name(text, sizeof text - 1, device) == 0 && memory(&bytes, device) == 0)
    description = std::string(text) + ", " + gibibytes(static_cast<double>(bytes));
  ::dlclose(driver);
  return description;
}

}  // namespace

std::vector<std::string> available_devices() {
  std::vector<std::string> devices{"cpu"};
  if (torch::cuda::is_available())
    for (std::size_t i = 0; i < torch::cuda::device_count(); ++i) devices.push_back("cuda:" + std::to_string(i));
  return devices;
}

std::vector<DeviceChoice> device_choices() {
  std::vector<DeviceChoice> choices;
  for (const std::string& id : available_devices()) {
    std::string about;
    if (id == "cpu") {
      const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
      const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
      about = std::to_string(cores) + (cores == 1 ? " core, " : " cores, ") + gibibytes(memory);
    } else {
      about = cuda_description(std::stoi(id.substr(5)));
    }
    choices.push_back({id, about.empty() ? id : id + ": " + about});
  }
  return choices;
}

}  // namespace xmc
