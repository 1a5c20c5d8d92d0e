// Byte-level BPE on any bytes: a tiny tokenizer with Qwen's pre-tokenizer, a few merges, added tokens and an NFC
// normaliser, loaded once; each input is a text to encode (ill-formed UTF-8, NUL, long runs, half special tokens).
// Every id must be in the vocabulary.
#include <nlohmann/json.hpp>

#include "engine/text/byte_level_bpe.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const xmc::ByteLevelBpe& tokenizer() {
  static const xmc::ByteLevelBpe bpe = [] {
    // GPT-2's byte characters: printable Latin-1 bytes stand for themselves, the rest for U+0100 + n.
    nlohmann::json vocab = nlohmann::json::object();
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int code = printable ? b : 256 + shifted++;
      std::string c;
      if (code < 0x80) c += static_cast<char>(code);
      else c += {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
      vocab[c] = b;
    }
    vocab["he"] = 256;
    vocab["ll"] = 257;
    vocab["hell"] = 258;
    vocab["\xC4\xA0\xC4\xA0"] = 259;  // two spaces
    const nlohmann::json j = {
        {"added_tokens", {{{"id", 300}, {"content", "<|im_start|>"}, {"special", true}, {"normalized", false}},
                          {{"id", 301}, {"content", "[M]"}, {"normalized", true}, {"lstrip", true}, {"rstrip", true}, {"single_word", true}}}},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern",
              {{"Regex", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array({nlohmann::json::array({"h", "e"}), nlohmann::json::array({"l", "l"}), nlohmann::json::array({"he", "ll"}),
                                            nlohmann::json::array({"\xC4\xA0", "\xC4\xA0"})})}}}};
    return xmc::ByteLevelBpe::from_file(xmc::fuzz::write("bpe.json", j.dump()));
  }();
  return bpe;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xmc::ByteLevelBpe& bpe = tokenizer();
  for (const std::int32_t id : bpe.encode(xmc::fuzz::as_text(data, size)))
    if (id < 0 || id >= bpe.vocab_size()) __builtin_trap();
  return 0;
}
