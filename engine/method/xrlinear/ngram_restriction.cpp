#include "engine/method/xrlinear/ngram_restriction.h"

#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/method/xrlinear/given_features.h"

namespace xmc {

NgramRestriction::NgramRestriction(const TfidfVectorizer& vectorizer, int max_words) : max_words_(max_words) {
  if (max_words < 1 || max_words > vectorizer.ngrams())
    throw Error("n-grams of at most " + std::to_string(max_words) + " words from a vectorizer of " + std::to_string(vectorizer.ngrams()) +
                "-grams");
  column_.resize(static_cast<std::size_t>(vectorizer.num_features()));
  for (std::int32_t id = 0; id < vectorizer.num_features(); ++id)
    column_[static_cast<std::size_t>(id)] = ngram_words(vectorizer.feature(id)) <= max_words ? static_cast<std::int32_t>(num_features_++) : -1;
}

CsrMatrix NgramRestriction::apply(const CsrMatrix& rows) const {
  if (rows.cols != static_cast<std::int64_t>(column_.size()))
    throw Error("tf-idf rows of " + std::to_string(rows.cols) + " features given to a restriction of " + std::to_string(column_.size()));
  if (!drops_features()) return rows;
  CsrMatrix out;
  out.cols = num_features_;
  out.indptr.reserve(static_cast<std::size_t>(rows.rows + 1));
  std::vector<std::int32_t> cols;
  std::vector<float> values;
  for (std::int64_t r = 0; r < rows.rows; ++r) {
    cols.clear();
    values.clear();
    const auto row_cols = rows.row_indices(r);
    const auto row_values = rows.row_values(r);
    for (std::size_t j = 0; j < row_cols.size(); ++j) {
      const std::int32_t kept = column_[static_cast<std::size_t>(row_cols[j])];
      if (kept < 0) continue;
      cols.push_back(kept);  // kept columns keep their order: the row stays sorted
      values.push_back(row_values[j]);
    }
    out.append_row(cols, values);
  }
  return l2_normalized_rows(std::move(out));
}

}  // namespace xmc
