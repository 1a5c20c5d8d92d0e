// A run's tfidf.txt (header "xmc-tfidf<TAB>ngrams<TAB>documents", then "n-gram<TAB>document frequency"), and the
// features of a query read through it.
#include "engine/text/tfidf_vectorizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("tfidf.txt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    const auto vectorizer = xmc::TfidfVectorizer::load(path);
    (void)vectorizer.transform({"some words of a query", "of a of a"});
  });
  return 0;
}
