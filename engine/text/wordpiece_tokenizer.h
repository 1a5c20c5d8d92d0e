#pragma once
// WordPiece tokenization as Hugging Face's BertTokenizer / BertTokenizerFast (BERT, DistilBERT, MiniLM).
//
// Steps, per text:
//  1. special tokens written literally in the text ([CLS], [SEP], [PAD], [UNK], [MASK] and the
//     added_tokens of tokenizer.json) are kept whole, as HF does;
//  2. clean (clean_text): U+0000, U+FFFD and control characters (category C*, except tab, LF, CR) are
//     dropped, whitespace becomes a space;
//  3. CJK ideographs get spaces around them (handle_chinese_chars);
//  4. split on whitespace; each word is lower-cased (full Unicode mapping per character) and its accents
//     stripped (NFD, then marks Mn dropped) as the normaliser says; a word that keeps its accents is NFC
//     normalised, as the Python tokenizer does;
//  5. every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, and Unicode P*) becomes its own word;
//  6. greedy longest-match-first WordPiece: continuation pieces carry the "##" prefix; a word longer than
//     max_input_chars_per_word characters, or one that cannot be covered by pieces, becomes [UNK].
// Not reproduced: Python's Final_Sigma rule in str.lower() (the Rust fast tokenizer does not apply it either).
// Invalid UTF-8 bytes count as U+FFFD. All methods are const and safe to call from several threads.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

struct WordPieceOptions {
  std::int64_t max_len = 128;       ///< ids per encoded text, [CLS] and [SEP] included; at least 2
  std::optional<bool> lowercase;    ///< overrides the files' lower-casing (accent stripping follows it
                                    ///< unless the files set strip_accents explicitly)
};

class WordPieceTokenizer {
 public:
  /// Reads a BERT `vocab.txt` (one token per line, id = line number - 1; lower-casing on by default) or a
  /// HF `tokenizer.json` (model type WordPiece, BertNormalizer or no normaliser), chosen by the file name
  /// ending in ".json". Throws InputError naming the file for an unreadable or malformed file, an
  /// unsupported model type (BPE, Unigram, ...) or a missing [CLS], [SEP], [PAD] or [UNK] token;
  /// ConfigError for max_len < 2.
  static WordPieceTokenizer from_file(const std::filesystem::path& vocab_or_tokenizer_json,
                                      WordPieceOptions options = {});

  /// Reads a HF model folder: tokenizer.json when present, else vocab.txt; tokenizer_config.json, when
  /// present, may set do_lower_case, strip_accents, tokenize_chinese_chars and the special token names.
  static WordPieceTokenizer from_folder(const std::filesystem::path& hf_folder, WordPieceOptions options = {});

  /// Word pieces of `text` (vocabulary strings, "##" continuations, unk token for unknown words), no
  /// [CLS]/[SEP], no truncation.
  std::vector<std::string> tokenize(std::string_view text) const;
  /// [CLS] id, the ids of the first max_len - 2 pieces, [SEP] id. No padding.
  std::vector<std::int32_t> encode(std::string_view text) const;
  /// encode() of every text, as one CSR corpus (row i = texts[i]).
  TokenizedCorpus encode_corpus(const std::vector<std::string>& texts) const;

  std::int32_t pad_id() const { return pad_id_; }  ///< id of the padding token ([PAD])
  std::int32_t cls_id() const { return cls_id_; }  ///< id of the classification token ([CLS])
  std::int32_t sep_id() const { return sep_id_; }  ///< id of the separator token ([SEP])
  std::int32_t unk_id() const { return unk_id_; }  ///< id of the unknown-word token ([UNK])
  /// Largest id + 1 (the number of lines of vocab.txt; added tokens included for tokenizer.json).
  std::int64_t vocab_size() const { return static_cast<std::int64_t>(tokens_.size()); }
  std::int64_t max_len() const { return max_len_; }  ///< ids per encoded text, at most
  bool lowercase() const { return lowercase_; }  ///< whether words are lower-cased
  bool strip_accents() const { return strip_accents_; }  ///< whether accents are stripped
  /// The token with id `id` (empty for an id no token has); throws std::out_of_range outside [0, vocab_size()).
  const std::string& token(std::int32_t id) const { return tokens_.at(static_cast<std::size_t>(id)); }
  /// Id of the vocabulary token `token` (exact string, "##" included), or unk_id().
  std::int32_t id_of(std::string_view token) const;

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using TokenMap = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;
  struct Scratch;
  struct Settings;

  WordPieceTokenizer() = default;
  static WordPieceTokenizer from_vocab_txt(const std::filesystem::path& path, const Settings& settings);
  static WordPieceTokenizer from_tokenizer_json(const std::filesystem::path& path, const Settings& settings);
  void finish(const std::string& file, const Settings& settings);

  // Appends the ids of `text` to `ids` until `ids` holds at least `limit` entries (it may hold more).
  void append_ids(std::string_view text, std::size_t limit, std::vector<std::int32_t>& ids) const;
  void append_plain_ids(std::string_view text, std::size_t limit, std::vector<std::int32_t>& ids, Scratch& s) const;
  // Basic tokens of `text` into s.pieces / s.spans; may stop once max_words tokens are there.
  void split_words(std::string_view text, std::size_t max_words, Scratch& s) const;
  void flush_word(Scratch& s) const;
  void append_word_pieces(std::string_view word, std::vector<std::int32_t>& ids) const;

  std::vector<std::string> tokens_;  ///< id -> token
  TokenMap ids_;                     ///< token -> id
  TokenMap continuation_ids_;        ///< token without its "##" prefix -> id, for tokens with the prefix
  std::vector<std::string> specials_;  ///< tokens matched literally in raw text, longest first
  std::vector<std::int32_t> special_ids_;  ///< ids of specials_
  std::uint8_t special_first_byte_[32] = {};  ///< bit set of the first bytes of specials_
  std::size_t max_token_bytes_ = 0;         ///< longest key of ids_
  std::size_t max_continuation_bytes_ = 0;  ///< longest key of continuation_ids_
  std::string continuing_prefix_ = "##";
  std::int64_t max_input_chars_per_word_ = 100;
  std::int64_t max_len_ = 128;
  bool lowercase_ = true;
  bool strip_accents_ = true;
  bool clean_text_ = true;
  bool handle_chinese_chars_ = true;
  std::int32_t pad_id_ = 0, cls_id_ = 0, sep_id_ = 0, unk_id_ = 0;
};

}  // namespace xmc
