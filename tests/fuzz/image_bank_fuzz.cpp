// Image feature banks (images/*.npy, NumPy's format) and their count files: the first byte says which of the
// two the rest of the input is, so both readers are fuzzed (a count file beside a fixed valid bank).
#include "engine/data/image_bank.h"
#include "engine/data/npy_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest = xmc::fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    const auto path = xmc::fuzz::write("bank.npy", rest);
    xmc::fuzz::expect_clean([&] {
      const xmc::ImageBank bank = xmc::ImageBank::open(path);
      (void)xmc::image_coverage(bank);
    });
  } else {
    static const auto bank = [] {
      const auto p = xmc::fuzz::scratch() / "fixed.npy";
      xmc::ImageBank::from_values(3, 2, 2, std::vector<float>(12, 1.0f)).save(p, {});
      return p;
    }();
    const auto counts = xmc::fuzz::write("bank_count.npy", rest);
    xmc::fuzz::expect_clean([&] { (void)xmc::image_coverage(xmc::ImageBank::open(bank, counts)); });
  }
  return 0;
}
