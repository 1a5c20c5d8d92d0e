// Extreme Classification Repository JSON lines ({"uid", "title", "content", "target_ind"}): the input is
// the train file, with a valid test file and a three-label label file.
#include "engine/data/xc_json_importer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto labels = xmc::fuzz::write("lbl.json", R"({"uid": "a", "title": "one"}
{"uid": "b", "title": "two"}
{"uid": "c", "title": "three"}
)");
  static const auto test = xmc::fuzz::write("tst.json", R"({"uid": "t", "title": "query", "content": "", "target_ind": [1]}
)");
  const auto train = xmc::fuzz::write("trn.json", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::import_xc_json({.train = train, .test = test, .labels = labels, .title_only = true}); });
  return 0;
}
