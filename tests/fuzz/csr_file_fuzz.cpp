// Binary CSR feature files (features/*.csr of `xmc dataset featurize`).
#include "engine/data/csr_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("m.csr", std::string(reinterpret_cast<const char*>(data), size));
  xmc::fuzz::expect_clean([&] { (void)xmc::read_csr_file(path); });
  return 0;
}
