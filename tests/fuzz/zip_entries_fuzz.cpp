// The zip integrity check checkpoints are verified with before LibTorch reads them: any bytes as an archive.
#include "engine/core/zip_integrity.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("checkpoint.pt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { (void)xmc::verify_zip_entries(path); });
  return 0;
}
