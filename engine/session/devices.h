#pragma once
// Which torch devices this build can train on (plain C++, for the GUI's device choice).
#include <string>
#include <vector>

namespace xmc {

/// "cpu" first, then "cuda:0", "cuda:1", ... when this LibTorch has CUDA and a device is present.
std::vector<std::string> available_devices();

/// A device as the workbench offers it: the value a config takes, and what the user reads.
struct DeviceChoice {
  std::string id;           ///< "cpu", "cuda:0"
  std::string description;  ///< "cpu: 16 cores, 125.8 GiB", "cuda:0: NVIDIA H100 80GB HBM3, 79.1 GiB"
};

/// available_devices() with their descriptions. GPU names and memory come from the CUDA driver, loaded at run
/// time (this build needs no CUDA headers); without it a GPU is described by its id alone.
std::vector<DeviceChoice> device_choices();

}  // namespace xmc
