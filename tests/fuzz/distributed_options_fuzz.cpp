// The multi-host options a user types: line 1 is --master (HOST:PORT), line 2 "RANK WORLD LOCAL TIMEOUT",
// line 3 "BACKEND DEVICE SHARED HAVE_GLOO HAVE_NCCL" (distributed.backend, the process's device, whether other
// processes share it, and what the build offers); parsed,
// validated and chosen as `xmc train --rank/--world-size/--master` does.
#include <sstream>

#include "engine/distributed/distributed_options.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    const auto end = std::min(text.find('\n'), text.size());
    xmc::DistributedOptions options;
    std::istringstream numbers(end < text.size() ? text.substr(end + 1) : std::string());
    numbers >> options.rank >> options.world_size >> options.local_world_size >> options.timeout_minutes;
    xmc::parse_master_address(text.substr(0, end), options);
    xmc::validate(options);
  });
  xmc::fuzz::expect_clean([&] {
    std::istringstream fields(text.substr(std::min(text.size(), text.find('\n', text.find('\n') + 1))));
    std::string backend, device;
    bool shared = false, have_gloo = false, have_nccl = false;
    fields >> backend >> device >> shared >> have_gloo >> have_nccl;
    const std::string chosen = xmc::choose_collective_backend(backend, device, shared, have_gloo, have_nccl);
    if (chosen != "gloo" && chosen != "nccl") __builtin_trap();
  });
  return 0;
}
