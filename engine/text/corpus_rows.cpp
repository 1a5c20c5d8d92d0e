#include "engine/text/corpus_rows.h"

#include <vector>

#include "engine/data/csr_rows.h"
#include "engine/data/image_bank.h"

namespace xmc {

TokenizedCorpus corpus_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
  TokenizedCorpus part;
  for (const std::int64_t r : rows) part.append(corpus.tokens(r));
  if (corpus.images) part.images = std::make_shared<const ImageBank>(corpus.images->subset(rows));
  if (corpus.features) part.features = std::make_shared<const CsrMatrix>(csr_rows(*corpus.features, rows));
  return part;
}

TokenizedCorpus corpus_rows(const TokenizedCorpus& corpus, std::int64_t begin, std::int64_t end) {
  TokenizedCorpus part;
  for (std::int64_t r = begin; r < end; ++r) part.append(corpus.tokens(r));
  // A range of a bank is a view of it: a shard of a million queries' images is not copied.
  if (corpus.images) part.images = std::make_shared<const ImageBank>(corpus.images->rows_between(begin, end));
  if (corpus.features) part.features = std::make_shared<const CsrMatrix>(csr_row_range(*corpus.features, begin, end));
  return part;
}

}  // namespace xmc
