// Filter expressions over runs, as typed in the Runs tab's box and `xmc runs list --where`: parsed, then applied to
// a run whose values come from the input's own bytes (numbers, texts and missing values alike).
#include "engine/records/run_filter.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    (void)xmc::looks_like_filter_expression(text);
    const xmc::RunFilter filter = xmc::RunFilter::parse(text);
    std::size_t asked = 0;
    (void)filter.matches([&](const std::string& name, xmc::FilterNameKind kind) -> xmc::FilterValue {
      switch ((name.size() + asked++) % 3) {
        case 0: return {};
        case 1: return static_cast<double>(name.size()) / 3;
        default: return xmc::filter_value_from_text(kind, text);
      }
    });
  });
  return 0;
}
