#pragma once
// The "words" tokenizer: a word vocabulary (vocabulary.h) as a TextTokenizer. What the bag-of-words encoder
// reads; its vocabulary is built from a run's training texts once and kept in the run's folder.
#include "engine/text/text_tokenizer.h"
#include "engine/text/tokenizer_info.h"
#include "engine/text/vocabulary.h"

namespace xmc {

class VocabularyTokenizer final : public TextTokenizer {
 public:
  explicit VocabularyTokenizer(Vocabulary vocabulary) : vocabulary_(std::move(vocabulary)) {}
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override;
  /// Not [PAD] or [UNK].
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override;
  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  Vocabulary vocabulary_;
};

/// Reads a vocabulary file ("xmc-vocabulary" header: a run's vocab.txt).
TokenizerInfo words_tokenizer_info();

}  // namespace xmc
