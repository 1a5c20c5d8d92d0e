// filter_labels_test.txt: "row label" pairs.
#include "engine/data/filter_pairs.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("filter_labels_test.txt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::read_filter_pairs(path, 100, 50); });
  xmc::fuzz::expect_clean([&] { xmc::read_filter_pairs(path); });
  return 0;
}
