// Mulan labels XML files (<label name="...">, nested, with entities).
#include "engine/data/mulan_importer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto xml = xmc::fuzz::write("labels.xml", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::read_mulan_label_names(xml); });
  return 0;
}
