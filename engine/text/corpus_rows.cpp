#include "engine/text/corpus_rows.h"

#include <numeric>
#include <vector>

#include "engine/data/image_bank.h"

namespace xmc {

TokenizedCorpus corpus_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
  TokenizedCorpus part;
  for (const std::int64_t r : rows) part.append(corpus.tokens(r));
  if (corpus.images) part.images = std::make_shared<const ImageBank>(corpus.images->subset(rows));
  return part;
}

TokenizedCorpus corpus_rows(const TokenizedCorpus& corpus, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(std::max<std::int64_t>(0, end - begin)));
  std::iota(rows.begin(), rows.end(), begin);
  return corpus_rows(corpus, rows);
}

}  // namespace xmc
