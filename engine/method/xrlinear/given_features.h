#pragma once
// xrlinear.features: given — ranking by the dataset's own sparse features (trn_X_Xf.txt and tst_X_Xf.txt, e.g. a
// mulan set's word attributes, or the BoW files of the XC repository) instead of tf-idf fit on its texts. Their
// rows are L2-normalised, as the tf-idf ones are. A free text (the Search tab, `xmc predict`) has no given row: it
// is featurized through the features' names (dataset.json feature_names) with an idf of 1, so a word present
// weighs 1 + ln(its count) before the row is normalised, which gives a binary feature set's own rows. Plain C++.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {

/// `m` with each row scaled to unit L2 norm (empty and all-zero rows stay as they are).
CsrMatrix l2_normalized_rows(CsrMatrix m);

/// The vectorizer free texts are featurized with: feature i is names[i] as one case-folded word; a name that is
/// not exactly one word, or repeats an earlier one, and every feature past the names (`count` > names) becomes
/// "[feature-i]", which no text produces.
TfidfVectorizer vectorizer_over_feature_names(const std::vector<std::string>& names, std::int64_t count);

/// Whether `name` (a feature of vectorizer_over_feature_names()) is a placeholder, reached by no text.
bool is_unnamed_feature(const std::string& name);

}  // namespace xmc
