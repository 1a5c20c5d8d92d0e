// dataset.json: name, source, propensity A/B, feature names.
#include "engine/data/dataset.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xmc::fuzz::write("dataset.json", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::read_dataset_meta(xmc::fuzz::scratch()); });
  return 0;
}
