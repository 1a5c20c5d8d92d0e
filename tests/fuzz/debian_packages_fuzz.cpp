// Debian package indexes (deb822 stanzas: Package, Description, Section, Tag over continuation lines).
#include "engine/data/debian_packages.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto file = xmc::fuzz::write("packages.txt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::read_debian_packages(file); });
  return 0;
}
