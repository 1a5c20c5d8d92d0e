#include "engine/text/word_tokenizer.h"

#include <utf8proc.h>

#include <cstdint>

#include "engine/text/well_formed_utf8.h"

namespace xmc {
namespace {

constexpr auto kFoldOptions = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT |
                                                             UTF8PROC_CASEFOLD | UTF8PROC_IGNORE);

bool is_ascii(std::string_view text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

bool is_ascii_alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

enum class CharClass { kWordStart, kWordContinue, kSeparator };

CharClass classify(utf8proc_int32_t cp) {
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharClass::kWordStart;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return CharClass::kWordContinue;
    default:
      return CharClass::kSeparator;
  }
}

// NFKC_Casefold code points of `text` (valid UTF-8) into `cps`; false when utf8proc rejects the text.
bool fold(std::string_view text, std::vector<utf8proc_int32_t>& cps) {
  const auto* str = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto len = static_cast<utf8proc_ssize_t>(text.size());
  cps.resize(text.size() + 16);
  auto n = utf8proc_decompose(str, len, cps.data(), static_cast<utf8proc_ssize_t>(cps.size()), kFoldOptions);
  if (n > static_cast<utf8proc_ssize_t>(cps.size())) {
    cps.resize(static_cast<std::size_t>(n));
    n = utf8proc_decompose(str, len, cps.data(), n, kFoldOptions);
  }
  if (n < 0) return false;
  n = utf8proc_normalize_utf32(cps.data(), n, kFoldOptions);
  if (n < 0) return false;
  cps.resize(static_cast<std::size_t>(n));
  return true;
}

void for_each_ascii_word(std::string_view text, std::string& word, const std::function<void(std::string_view)>& fn) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_ascii_alnum(c)) {
      word.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
    } else if (!word.empty()) {
      fn(word);
      word.clear();
    }
  }
  if (!word.empty()) fn(word);
}

}  // namespace

void WordTokenizer::for_each_word(std::string_view text, const std::function<void(std::string_view)>& fn) {
  std::string word;  // local, not shared: `fn` may itself tokenize
  if (is_ascii(text)) {
    for_each_ascii_word(text, word, fn);
    return;
  }
  std::vector<utf8proc_int32_t> cps;
  if (!fold(text, cps) && !fold(replace_ill_formed_utf8(text), cps)) return;  // unreachable: sanitised text is valid
  utf8proc_uint8_t bytes[4];
  for (const auto cp : cps) {
    const CharClass cls = classify(cp);
    if (cls == CharClass::kWordStart || (cls == CharClass::kWordContinue && !word.empty())) {
      const auto len = utf8proc_encode_char(cp, bytes);
      word.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(len));
    } else if (!word.empty()) {
      fn(word);
      word.clear();
    }
  }
  if (!word.empty()) fn(word);
}

std::vector<std::string> WordTokenizer::tokenize(std::string_view text) {
  std::vector<std::string> words;
  for_each_word(text, [&](std::string_view w) { words.emplace_back(w); });
  return words;
}

}  // namespace xmc
