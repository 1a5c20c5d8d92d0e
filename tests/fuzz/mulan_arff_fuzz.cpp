// Mulan sparse/dense ARFF files: the input is the train file (and the test file), with a labels XML that
// names two labels.
#include "engine/data/mulan_importer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto xml = xmc::fuzz::write("labels.xml", R"(<?xml version="1.0"?><labels><label name="TAG_a"/><label name="TAG_b"/></labels>)");
  const auto arff = xmc::fuzz::write("train.arff", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::import_mulan({.train_arff = arff, .test_arff = arff, .labels_xml = xml}); });
  return 0;
}
