#pragma once
// A decoder's texts as its encoder reads them (plain C++, no torch): each text put in the prompt template
// ("This product text: {text}"), the whole prompted string tokenized at once by the model's byte-level BPE,
// cut to max_len − 1 ids, then the EOS id appended (ViXML's recipe; pooling then covers the EOS too).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/byte_level_bpe.h"
#include "engine/text/text_tokenizer.h"

namespace xmc {

class PromptedTokenizer final : public TextTokenizer {
 public:
  /// `prompt_template` must contain "{text}" (ConfigError otherwise); every occurrence is replaced. max_len ≥ 2.
  PromptedTokenizer(ByteLevelBpe bpe, std::string prompt_template, std::int32_t eos_id, std::int64_t max_len);

  /// The ids of one text: the prompted string's, cut to max_len − 1, then EOS.
  std::vector<std::int32_t> encode(std::string_view text) const;
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override;
  /// The ids that came from the text itself: not special tokens, not the template's own.
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override;


 private:
  std::string prompted(std::string_view text) const;

  ByteLevelBpe bpe_;
  std::string template_;
  std::int32_t eos_id_;
  std::int64_t max_len_;
  std::int64_t template_tokens_ = 0;  ///< non-special ids of the template with an empty text
};

/// The EOS id a decoder's prompts end with: `config_eos` (config.json's eos_token_id) when given, else
/// tokenizer_config.json's "eos_token" beside `tokenizer_json` looked up in `bpe`. Throws InputError naming
/// the files when neither gives one the vocabulary holds.
std::int32_t decoder_eos_id(const ByteLevelBpe& bpe, const std::filesystem::path& tokenizer_json, std::optional<std::int64_t> config_eos,
                            const std::filesystem::path& config_json);

}  // namespace xmc
