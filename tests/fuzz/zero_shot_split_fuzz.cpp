// A zero-shot split's label and row lists (novel_labels.txt here; the others are read the same way), checked
// against the split's other files.
#include "engine/data/zero_shot_split.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace f = xmc::zero_shot_files;
  static const bool ready = [] {  // a split of 4 train and 3 test rows over 5 labels
    xmc::fuzz::write(f::kPseudoNovelLabels, "1\n");
    xmc::fuzz::write(f::kTrainObservedLabels, "4 5\n0:1\n1:1 2:1\n\n4:1\n");
    xmc::fuzz::write(f::kTestFullLabels, "3 5\n3:1\n0:1\n3:1 4:1\n");
    xmc::fuzz::write(f::kTestZeroLabels, "2 5\n3:1\n3:1\n");
    xmc::fuzz::write(f::kTestZeroRows, "0\n2\n");
    return true;
  }();
  (void)ready;
  xmc::fuzz::write(f::kNovelLabels, xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([] { xmc::read_zero_shot_split(xmc::fuzz::scratch(), 4, 3, 5); });
  return 0;
}
