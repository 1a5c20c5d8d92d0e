// A run's vocab.txt (header "xmc-vocabulary<TAB>documents", then "word<TAB>document frequency").
#include "engine/text/vocabulary.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("vocab.txt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    const auto vocabulary = xmc::Vocabulary::load(path);
    (void)vocabulary.idf_table();
    (void)vocabulary.encode("some words of a query");
  });
  return 0;
}
