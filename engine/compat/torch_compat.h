#pragma once
// Engine-internal (includes torch). Every difference between the LibTorch versions the engine builds against
// — Debian's 1.13 (CPU) and a CUDA LibTorch 2.x from PyTorch — is bridged here and nowhere else: the rest of
// the engine calls these and never tests TORCH_VERSION itself.
#include <torch/torch.h>
#include <torch/version.h>

/// True when building against LibTorch major.minor or newer.
#define XMC_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace c10d {
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace xmc {

/// The base class of c10d's process groups (Gloo, NCCL), whose collectives the communicator calls: LibTorch
/// 2.0 moved them from ProcessGroup to Backend.
#if XMC_TORCH_AT_LEAST(2, 0)
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

/// Autocast's state on the CPU or the GPU: LibTorch 2.4 made these device-generic and deprecated the
/// per-device setters that 1.13 has.
bool autocast_enabled(bool cuda);
torch::ScalarType autocast_dtype(bool cuda);
void set_autocast(bool cuda, bool enabled, torch::ScalarType dtype);

}  // namespace xmc
