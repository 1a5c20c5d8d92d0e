// WordPiece vocabularies: a Hugging Face tokenizer.json and the same bytes as a vocab.txt, then a text
// tokenized with whatever loaded.
#include "engine/text/wordpiece_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = xmc::fuzz::as_text(data, size);
  for (const char* name : {"tokenizer.json", "vocab.txt"}) {
    const auto path = xmc::fuzz::write(name, text);
    xmc::fuzz::expect_clean([&] {
      const auto tokenizer = xmc::WordPieceTokenizer::from_file(path);
      (void)tokenizer.encode("Hello, unaffable world! [SEP] \xE4\xB8\xAD");
    });
  }
  return 0;
}
