#include "engine/method/xrlinear/paired_tokenizer.h"

#include "engine/text/corpus_rows.h"

#include <string>

#include "engine/core/error.h"

namespace xmc {

TokenizedCorpus PairedTokenizer::tokenize(const std::vector<std::string>& texts) const {
  const TokenizedCorpus a = first_.tokenize(texts);
  const TokenizedCorpus b = second_.tokenize(texts);
  TokenizedCorpus out;
  out.token_ids.reserve(a.token_ids.size() + b.token_ids.size() + texts.size());
  out.offsets.reserve(texts.size() + 1);
  for (std::int64_t row = 0; row < a.size(); ++row) {
    const auto first = a.tokens(row);
    const auto second = b.tokens(row);
    out.token_ids.push_back(static_cast<std::int32_t>(first.size()));
    out.token_ids.insert(out.token_ids.end(), first.begin(), first.end());
    out.token_ids.insert(out.token_ids.end(), second.begin(), second.end());
    out.offsets.push_back(static_cast<std::int64_t>(out.token_ids.size()));
  }
  return out;
}

namespace {

/// The two parts of one paired row.
std::pair<std::span<const std::int32_t>, std::span<const std::int32_t>> parts(std::span<const std::int32_t> row, std::int64_t at) {
  if (row.empty() || row[0] < 0 || static_cast<std::size_t>(row[0]) > row.size() - 1)
    throw Error("paired tokens: row " + std::to_string(at) + " is not a pair of tokenizations (its first count " +
                (row.empty() ? std::string("is missing") : std::to_string(row[0]) + " runs past its " + std::to_string(row.size() - 1) + " tokens") + ")");
  const auto n = static_cast<std::size_t>(row[0]);
  return {row.subspan(1, n), row.subspan(1 + n)};
}

}  // namespace

std::int64_t PairedTokenizer::known_tokens(std::span<const std::int32_t> tokens) const {
  const auto [first, second] = parts(tokens, 0);
  return first_.known_tokens(first) + second_.known_tokens(second);
}

std::pair<TokenizedCorpus, TokenizedCorpus> split_paired(const TokenizedCorpus& paired, std::int64_t begin, std::int64_t end) {
  if (begin < 0 || end < begin || end > paired.size())
    throw Error("paired tokens: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") are outside a corpus of " + std::to_string(paired.size()));
  std::pair<TokenizedCorpus, TokenizedCorpus> out;
  for (std::int64_t row = begin; row < end; ++row) {
    const auto [first, second] = parts(paired.tokens(row), row);
    out.first.append(first);
    out.second.append(second);
  }
  if (paired.images || paired.features) {
    TokenizedCorpus rows = corpus_rows(paired, begin, end);
    out.second.images = rows.images;      // the dense encoder's, row for row
    out.first.features = rows.features;   // the sparse side's
  }
  return out;
}

}  // namespace xmc
