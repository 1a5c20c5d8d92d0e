// Tokenizer files: the same bytes as a Hugging Face tokenizer.json and as a vocab.txt, each loaded the way
// `xmc tokenize` loads a file (the registered tokenizer that reads it, or a refusal), then a text tokenized with
// whatever loaded; and each registered tokenizer's file check on them.
#include "engine/text/tokenizer_info.h"
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
    for (const xmc::TokenizerInfo& info : xmc::registered_tokenizers()) (void)info.reads(path);  // never throws
    xmc::fuzz::expect_clean([&] {
      const auto tokenizer = xmc::make_tokenizer({.file = path, .max_len = 16});
      (void)tokenizer->tokenize({"Hello, unaffable world!", "", "\xE4\xB8\xAD \xFF"});
    });
  }
  return 0;
}
