#pragma once
// Splits text into case-folded words for the bag-of-words encoder.
//
// A text is first normalised with Unicode NFKC_Casefold (utf8proc: compatibility composition, full case
// folding, default-ignorable characters such as the soft hyphen removed), so "Straße" and "STRASSE" give
// the same word and decomposed accents match precomposed ones. A word is then a maximal run of letters
// and digits (Unicode categories L* and N*); combining marks (M*) that follow a letter or digit stay in
// its word (Devanagari vowel signs, accents that have no precomposed form). Everything else separates
// words: "don't" -> "don", "t"; "e-mail" -> "e", "mail". Ideographic text is not segmented further.
// Invalid UTF-8 bytes act as separators.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace xmc {

class WordTokenizer {
 public:
  /// The words of `text`, in order, repeats included.
  static std::vector<std::string> tokenize(std::string_view text);

  /// Calls `fn` once per word, in order; the view is valid only during the call. No allocation per word.
  static void for_each_word(std::string_view text, const std::function<void(std::string_view word)>& fn);
};

}  // namespace xmc
