#pragma once
// Two tokenizations of one text in one corpus row: xrlinear fused with a dense run ranks a query with its own
// tf-idf features and with the dense run's encoder, and both read the same TokenizedCorpus (the trainer, the
// predictor and the search panel tokenize with the method's one tokenizer). A row is
//   [n, the first tokenizer's n tokens..., the second tokenizer's tokens...]
// and split_paired() takes rows apart again.
#include <cstdint>
#include <utility>

#include "engine/text/text_tokenizer.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

class PairedTokenizer final : public TextTokenizer {
 public:
  /// Both are borrowed: they must outlive this tokenizer.
  PairedTokenizer(const TextTokenizer& first, const TextTokenizer& second) : first_(first), second_(second) {}

  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override;
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override;

 private:
  const TextTokenizer& first_;
  const TextTokenizer& second_;
};

/// Rows [begin, end) of a PairedTokenizer's corpus as the first and the second tokenizer's corpora. Throws
/// xmc::Error naming the row when one is not a paired row (its count runs past its end).
std::pair<TokenizedCorpus, TokenizedCorpus> split_paired(const TokenizedCorpus& paired, std::int64_t begin, std::int64_t end);

}  // namespace xmc
