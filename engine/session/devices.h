#pragma once
// Which torch devices this build can train on (plain C++, for the GUI's device choice).
#include <string>
#include <vector>

namespace xmc {

/// "cpu" first, then "cuda:0", "cuda:1", ... when this LibTorch has CUDA and a device is present.
std::vector<std::string> available_devices();

}  // namespace xmc
