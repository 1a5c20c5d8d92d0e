#include "engine/method/xrlinear/given_features.h"

#include <cmath>
#include <unordered_set>

#include "engine/text/word_tokenizer.h"

namespace xmc {

CsrMatrix l2_normalized_rows(CsrMatrix m) {
  for (std::int64_t r = 0; r < m.rows; ++r) {
    const auto begin = static_cast<std::size_t>(m.indptr[static_cast<std::size_t>(r)]);
    const auto end = static_cast<std::size_t>(m.indptr[static_cast<std::size_t>(r) + 1]);
    double squares = 0;
    for (std::size_t j = begin; j < end; ++j) squares += static_cast<double>(m.values[j]) * m.values[j];
    if (squares <= 0) continue;
    const double scale = 1.0 / std::sqrt(squares);
    for (std::size_t j = begin; j < end; ++j) m.values[j] = static_cast<float>(m.values[j] * scale);
  }
  return m;
}

TfidfVectorizer vectorizer_over_feature_names(const std::vector<std::string>& names, std::int64_t count) {
  std::vector<std::string> words;
  std::unordered_set<std::string> used;
  for (std::int64_t i = 0; i < count; ++i) {
    std::vector<std::string> parts;
    if (i < static_cast<std::int64_t>(names.size())) parts = WordTokenizer::tokenize(names[static_cast<std::size_t>(i)]);
    if (parts.size() == 1 && used.insert(parts.front()).second) {
      words.push_back(parts.front());
    } else {
      words.push_back("[feature-" + std::to_string(i) + "]");
    }
  }
  return TfidfVectorizer::with_unit_idf(words);
}

bool is_unnamed_feature(const std::string& name) { return name.rfind("[feature-", 0) == 0; }

}  // namespace xmc
