// The pickle shape check a LibTorch archive's pickles pass before LibTorch unpickles them: any bytes.
#include "engine/core/pickle_shape.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xmc::fuzz::expect_clean([&] { xmc::check_pickle_shape("checkpoint.pt", "archive/data.pkl", xmc::fuzz::as_text(data, size)); });
  return 0;
}
