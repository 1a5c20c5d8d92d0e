// hard.search's descriptions ("ivf:probe=32,size=300", "hnsw:M=8,ef=50"), as a config or --set gives them: checked and
// taken apart, with hard.probe and hard.cluster_size drawn from the input so that the give-it-once rule is reached too.
#include "engine/sampler/negatives_options.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xmc::NegativesOptions options;
  options.search = std::string(xmc::fuzz::as_text(data, size));
  if (size > 0 && data[0] % 3 == 1) options.probe = 1 + data[0];
  if (size > 0 && data[0] % 5 == 2) options.cluster_size = 7;
  xmc::fuzz::expect_clean([&] { (void)xmc::check_shortlist_search(options); });
  return 0;
}
