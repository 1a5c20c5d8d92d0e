#pragma once
// Texts -> token ids for a model's encoder: what an encoder's factory pairs with it (a word vocabulary for
// bow, WordPiece for bert). Plain C++: no torch.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  virtual TokenizedCorpus tokenize(const std::vector<std::string>& texts) const = 0;
  /// How many of `tokens` (one text's) are vocabulary entries: not padding, unknown or a marker token.
  /// A query with none is ranked from nothing its encoder learned.
  virtual std::int64_t known_tokens(std::span<const std::int32_t> tokens) const = 0;
};

}  // namespace xmc
