#pragma once
// Byte-level BPE, as Hugging Face tokenizers runs it for Qwen2/Qwen3, Llama 3 and GPT-2 (plain C++, no torch).
// Read from a model's tokenizer.json:
//   - added tokens (special ones such as <|im_start|>) are matched in the text first, leftmost-longest, and
//     become their own ids;
//   - the normaliser, when one is given (NFC, NFD, NFKC, NFKD, Lowercase, or a Sequence of them), runs on the
//     rest;
//   - the pre-tokenizer splits it: Qwen's and Llama 3's Split regex, or GPT-2's ByteLevel regex (each written
//     out here as its regex matches: leftmost alternative first, with the regex's backtracking);
//   - each piece's UTF-8 bytes become GPT-2's printable byte characters and are merged by rank.
// Ids equal the reference implementation's on every line of tests/fixtures/bpe (no special tokens added: a
// caller adds what its model needs). Any bytes are accepted: ill-formed UTF-8 becomes U+FFFD first.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/text_tokenizer.h"
#include "engine/text/tokenizer_info.h"

namespace xmc {

class ByteLevelBpe {
 public:
  /// Reads a tokenizer.json whose model is BPE with a ByteLevel pre-tokenizer or decoder. Throws InputError
  /// naming the file for a malformed one, a model of another type (by name), a pre-tokenizer or normaliser
  /// this implementation does not know (by name and pattern), or a merge of unknown tokens.
  static ByteLevelBpe from_file(const std::filesystem::path& tokenizer_json);

  /// The ids of `text`, added tokens included where they occur, none added.
  std::vector<std::int32_t> encode(std::string_view text) const;

  std::int64_t vocab_size() const { return vocab_size_; }
  /// The id of a token (a vocabulary entry or an added token), or -1.
  std::int32_t id_of(std::string_view token) const;
  /// Whether `id` is an added token marked special (<|endoftext|>, <|im_start|>, ...).
  bool is_special(std::int32_t id) const;

 private:
  struct AddedToken {
    std::string content;
    std::int32_t id = 0;
    bool special = false;
    bool normalized = false;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
  };
  enum class Normalization { Nfc, Nfd, Nfkc, Nfkd, Lowercase };
  enum class Split { Qwen, Gpt2 };  // which regex splits the text before the bytes are mapped
  struct PairHash {
    std::size_t operator()(std::uint64_t key) const { return std::hash<std::uint64_t>()(key * 0x9E3779B97F4A7C15ULL); }
  };
  struct Merge {
    std::int32_t rank = 0;
    std::int32_t merged = 0;
  };

  ByteLevelBpe() = default;
  std::string normalize(std::string_view text) const;
  void encode_plain(std::string_view normalized, std::vector<std::int32_t>& ids) const;
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& ids) const;
  void encode_segment(std::string_view text, bool normalized_tokens, std::vector<std::int32_t>& ids) const;

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::int64_t vocab_size_ = 0;
  std::unordered_map<std::uint64_t, Merge, PairHash> merges_;  ///< (left id << 32 | right id) -> rank, merged id
  std::int32_t byte_ids_[256] = {};                            ///< the id of each byte's character (-1: none)
  std::vector<AddedToken> added_;
  std::vector<std::int32_t> special_ids_;  ///< sorted
  std::vector<Normalization> normalizers_;
  Split split_ = Split::Qwen;
  std::int64_t digits_per_piece_ = 1;  ///< Qwen: \p{N}; Llama 3: \p{N}{1,3}
  bool add_prefix_space_ = false;
  bool ignore_merges_ = false;         ///< a piece that is a vocabulary entry is taken whole (Llama 3)
};

/// ByteLevelBpe as a TextTokenizer: ids capped at max_len (0: no cap).
class ByteLevelBpeTokenizer final : public TextTokenizer {
 public:
  ByteLevelBpeTokenizer(ByteLevelBpe bpe, std::int64_t max_len) : bpe_(std::move(bpe)), max_len_(max_len) {}
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override;
  /// Not special added tokens.
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override;
  const ByteLevelBpe& bpe() const { return bpe_; }

 private:
  ByteLevelBpe bpe_;
  std::int64_t max_len_ = 0;
};

/// The tokenizer.json of `path`: the file itself, or the one in a model folder.
std::filesystem::path tokenizer_json_of(const std::filesystem::path& path);

/// Reads a tokenizer.json of model type BPE (or a model folder holding one).
TokenizerInfo bpe_tokenizer_info();

}  // namespace xmc
