#pragma once
// The "wordpiece" tokenizer: WordPiece (wordpiece_tokenizer.h) as a TextTokenizer, [CLS] ... [SEP] per text.
// What the bert encoder reads, from a Hugging Face folder's tokenizer.json or vocab.txt.
#include "engine/text/text_tokenizer.h"
#include "engine/text/tokenizer_info.h"
#include "engine/text/wordpiece_tokenizer.h"

namespace xmc {

class WordPieceTextTokenizer final : public TextTokenizer {
 public:
  explicit WordPieceTextTokenizer(WordPieceTokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override { return tokenizer_.encode_corpus(texts); }
  /// Not [PAD], [UNK], [CLS] or [SEP].
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override;
  const WordPieceTokenizer& wordpiece() const { return tokenizer_; }

 private:
  WordPieceTokenizer tokenizer_;
};

/// Reads a model folder, a vocab.txt or a tokenizer.json of model type WordPiece.
TokenizerInfo wordpiece_tokenizer_info();

}  // namespace xmc
