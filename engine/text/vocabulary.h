#pragma once
// The word vocabulary of the bag-of-words encoder, built from the training texts with WordTokenizer.
//
// Ids: 0 = "[PAD]", 1 = "[UNK]", then the kept words by descending number of occurrences, ties broken
// by byte-wise lexicographic order, so the same texts always give the same ids. Document frequencies
// are kept for TF-IDF weights. Words never contain brackets, so the two specials cannot collide.
//
// File format (UTF-8 text): line 1 is the header "xmc-vocabulary<TAB>N_DOCS"; then one
// "WORD<TAB>DF" line per id, starting with "[PAD]<TAB>0" and "[UNK]<TAB>0" (line n holds id n - 2).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

struct VocabularyOptions {
  std::int64_t min_count = 1;  ///< keep words that occur at least this many times in all texts together
  std::int64_t max_size = 0;   ///< keep at most this many words, [PAD] and [UNK] not counted; 0 = no cap
};

class Vocabulary {
 public:
  static constexpr std::int32_t kPadId = 0;  ///< id of "[PAD]"
  static constexpr std::int32_t kUnkId = 1;  ///< id of "[UNK]": words not in the vocabulary

  /// A vocabulary holding only [PAD] and [UNK], over zero documents.
  Vocabulary();

  /// Counts the words of `texts` (each text is one document) and keeps those selected by `options`.
  /// Throws ConfigError when min_count < 1 or max_size < 0.
  static Vocabulary build(const std::vector<std::string>& texts, VocabularyOptions options = {});

  /// Reads a file written by save(); a malformed line is an InputError naming the file and line.
  static Vocabulary load(const std::filesystem::path& path);
  /// Writes the vocabulary atomically in the format described above.
  void save(const std::filesystem::path& path) const;

  /// Number of ids, [PAD] and [UNK] included.
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  /// Number of documents (texts) the vocabulary was built from.
  std::int64_t num_documents() const { return num_documents_; }

  /// Id of `word` (an already tokenized, case-folded word), or kUnkId when it is not in the vocabulary.
  std::int32_t id_of(std::string_view word) const;
  /// The word with id `id`, 0 <= id < size(); throws std::out_of_range otherwise.
  const std::string& word(std::int32_t id) const { return words_.at(static_cast<std::size_t>(id)); }
  /// Number of documents containing the word `id` (0 for [PAD] and [UNK]).
  std::int64_t document_frequency(std::int32_t id) const { return dfs_.at(static_cast<std::size_t>(id)); }
  /// Smooth inverse document frequency, as scikit-learn: ln((1 + N_docs) / (1 + df)) + 1.
  double idf(std::int32_t id) const;
  /// idf(id) for every id, size size(), for the encoder's TF-IDF weights.
  std::vector<float> idf_table() const;

  /// Ids of the words of `text` in order; unknown words give kUnkId.
  std::vector<std::int32_t> encode(std::string_view text) const;
  /// encode() of every text, as one CSR corpus (row i = texts[i]).
  TokenizedCorpus tokenize_corpus(const std::vector<std::string>& texts) const;

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void add_word(std::string word, std::int64_t df);

  std::vector<std::string> words_;  ///< id -> word
  std::vector<std::int64_t> dfs_;   ///< id -> document frequency
  std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> ids_;  ///< word -> id
  std::int64_t num_documents_ = 0;
};

}  // namespace xmc
