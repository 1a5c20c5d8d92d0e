// The multi-host options a user types: line 1 is --master (HOST:PORT), line 2 "RANK WORLD LOCAL TIMEOUT";
// parsed and validated as `xmc train --rank/--world-size/--master` does.
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
  return 0;
}
