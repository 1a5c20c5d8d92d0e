// GloVe text word vectors ("word v1 v2 ... vd" per line).
#include "engine/text/word_vectors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("vectors.txt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::load_glove_vectors(path, {"the", "a", "cat", "[PAD]"}); });
  return 0;
}
