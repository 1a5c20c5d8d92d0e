#pragma once
// TF-IDF features of texts: word n-grams (WordTokenizer's words, n = 1 .. ngrams) weighted by sublinear term
// frequency 1 + ln(tf) times the smooth idf ln((1 + N) / (1 + df)) + 1 (scikit-learn's TfidfVectorizer with
// sublinear_tf), each row L2-normalised. The sparse rankers of xrlinear read queries through it.
//
// Fitting counts document frequencies over the training texts only. Unigrams are kept when they occur in at
// least min_df texts, longer n-grams when they occur in at least max(min_df, 2) (an n-gram seen in one text
// generalises to nothing). With max_features, the n-grams in most texts are kept (ties: byte-wise order).
// Feature ids follow descending df, ties by byte-wise order, so the same texts always give the same ids.
//
// As a TextTokenizer it turns a text into the ids of its known n-grams (unknown ones dropped); features()
// turns such rows into tf-idf rows, so a corpus is tokenized once and featurized in chunks.
//
// File format (UTF-8 text): line 1 "xmc-tfidf<TAB>NGRAMS<TAB>N_DOCS"; then one "NGRAM<TAB>DF" line per
// feature id, words of an n-gram joined by one space.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"
#include "engine/text/text_tokenizer.h"

namespace xmc {

struct TfidfOptions {
  int ngrams = 1;                 ///< longest word n-gram (1 or 2 or 3)
  std::int64_t min_df = 1;        ///< fewest training texts a kept n-gram occurs in
  std::int64_t max_features = 0;  ///< most features kept; 0 = no cap
};

/// How many words an n-gram (a feature's name, words joined by one space) has.
std::int64_t ngram_words(std::string_view ngram);

class TfidfVectorizer final : public TextTokenizer {
 public:
  /// Counts the n-grams of `texts` (one document each). Throws ConfigError on options out of range.
  static TfidfVectorizer fit(const std::vector<std::string>& texts, TfidfOptions options, Progress& progress = silent_progress());
  /// A vectorizer of unigrams `words` (feature i = words[i]) whose idf is 1 for every one: a text's row is
  /// 1 + ln(tf) for each of its known words, L2-normalised. Throws Error for a word that is empty, holds a space
  /// or tab, or repeats an earlier one (save() and load() could not keep it).
  static TfidfVectorizer with_unit_idf(const std::vector<std::string>& words);
  /// Reads a file written by save(); a malformed line is an InputError naming the file and line.
  static TfidfVectorizer load(const std::filesystem::path& path);
  /// Writes the vocabulary and document frequencies atomically.
  void save(const std::filesystem::path& path) const;

  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override;
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override { return static_cast<std::int64_t>(tokens.size()); }

  /// TF-IDF rows of corpus rows [begin, end) (a corpus from tokenize()), [end - begin x num_features()],
  /// L2-normalised; a text with no known n-gram is an empty row.
  CsrMatrix features(const TokenizedCorpus& corpus, std::int64_t begin, std::int64_t end) const;
  /// features() of every text.
  CsrMatrix transform(const std::vector<std::string>& texts) const;

  std::int64_t num_features() const { return static_cast<std::int64_t>(ngrams_.size()); }
  std::int64_t num_documents() const { return num_documents_; }
  int ngrams() const { return ngram_length_; }
  const std::string& feature(std::int32_t id) const { return ngrams_.at(static_cast<std::size_t>(id)); }
  std::int64_t document_frequency(std::int32_t id) const { return dfs_.at(static_cast<std::size_t>(id)); }
  float idf(std::int32_t id) const { return idf_.at(static_cast<std::size_t>(id)); }

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  void add(std::string ngram, std::int64_t df);
  void finish_idf();
  /// Calls `fn` with every n-gram of `text` (n = 1 .. ngram_length_), in order of their last word.
  void for_each_ngram(std::string_view text, const std::function<void(std::string_view)>& fn) const;

  int ngram_length_ = 1;
  std::int64_t num_documents_ = 0;
  std::vector<std::string> ngrams_;
  std::vector<std::int64_t> dfs_;
  std::vector<float> idf_;
  std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> ids_;
};

}  // namespace xmc
