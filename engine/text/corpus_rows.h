#pragma once
// Some rows of a tokenized corpus as a corpus of their own, their images and given features with them (plain C++).
#include <cstdint>
#include <span>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

/// Rows `rows` of `corpus`, in that order; with a bank, the same rows of it (copied).
TokenizedCorpus corpus_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows);
/// Rows [begin, end); their images are a view of the bank, not a copy.
TokenizedCorpus corpus_rows(const TokenizedCorpus& corpus, std::int64_t begin, std::int64_t end);

}  // namespace xmc
