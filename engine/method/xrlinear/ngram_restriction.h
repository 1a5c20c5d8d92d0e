#pragma once
// The tf-idf features of n-grams of at most `max_words` words, read from a vectorizer fit with longer ones
// (xrlinear.choose: candidates of 1 and 2 words share one tokenization of the corpora). Plain C++.
//
// Dropping a vectorizer's longer n-grams from its rows and scaling each row to unit length again gives exactly
// the rows of a vectorizer fit on the same texts with the shorter n-grams alone: an n-gram's document frequency
// and idf do not depend on which other n-grams are counted, and feature ids follow descending df (ties by bytes)
// in both, so the kept features keep their order. (Not with xrlinear.max_features, which caps both sets at once.)
#include <cstdint>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {

class NgramRestriction {
 public:
  /// The features of `vectorizer` of at most `max_words` words (1 .. vectorizer.ngrams(); Error otherwise).
  NgramRestriction(const TfidfVectorizer& vectorizer, int max_words);

  int max_words() const { return max_words_; }
  /// Features kept: the column count of apply()'s rows.
  std::int64_t num_features() const { return num_features_; }
  /// Whether it drops any feature (false: apply() returns its rows unchanged).
  bool drops_features() const { return num_features_ != static_cast<std::int64_t>(column_.size()); }
  /// `rows` (the vectorizer's features) without the longer n-grams, renumbered and scaled to unit length; a row
  /// left with none is empty. Error when `rows` has another column count than the vectorizer's features.
  CsrMatrix apply(const CsrMatrix& rows) const;

 private:
  int max_words_;
  std::vector<std::int32_t> column_;  ///< per vectorizer feature: its kept column, or -1
  std::int64_t num_features_ = 0;
};

}  // namespace xmc
