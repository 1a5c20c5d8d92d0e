#include "engine/text/prompted_tokenizer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/json_file.h"

namespace xmc {

PromptedTokenizer::PromptedTokenizer(ByteLevelBpe bpe, std::string prompt_template, std::int32_t eos_id, std::int64_t max_len)
    : bpe_(std::move(bpe)), template_(std::move(prompt_template)), eos_id_(eos_id), max_len_(max_len) {
  if (template_.find("{text}") == std::string::npos)
    throw ConfigError("encoder.template: \"" + template_ + "\" has no {text} to put the text in");
  if (max_len_ < 2) throw ConfigError("encoder.max_len: " + std::to_string(max_len_) + " leaves no room for a text and its EOS");
  const std::vector<std::int32_t> bare = bpe_.encode(prompted(""));
  template_tokens_ = std::count_if(bare.begin(), bare.end(), [this](std::int32_t id) { return !bpe_.is_special(id); });
}

std::string PromptedTokenizer::prompted(std::string_view text) const {
  std::string out;
  std::size_t at = 0;
  for (std::size_t next; (next = template_.find("{text}", at)) != std::string::npos; at = next + 6) {
    out.append(template_, at, next - at);
    out.append(text);
  }
  out.append(template_, at);
  return out;
}

std::vector<std::int32_t> PromptedTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids = bpe_.encode(prompted(text));
  if (static_cast<std::int64_t>(ids.size()) > max_len_ - 1) ids.resize(static_cast<std::size_t>(max_len_ - 1));
  ids.push_back(eos_id_);
  return ids;
}

TokenizedCorpus PromptedTokenizer::tokenize(const std::vector<std::string>& texts) const {
  TokenizedCorpus corpus;
  for (const std::string& text : texts) corpus.append(encode(text));
  return corpus;
}

std::int64_t PromptedTokenizer::known_tokens(std::span<const std::int32_t> tokens) const {
  const auto plain = std::count_if(tokens.begin(), tokens.end(), [this](std::int32_t id) { return id != eos_id_ && !bpe_.is_special(id); });
  return std::max<std::int64_t>(0, plain - template_tokens_);
}

std::int32_t decoder_eos_id(const ByteLevelBpe& bpe, const std::filesystem::path& tokenizer_json, std::optional<std::int64_t> config_eos,
                            const std::filesystem::path& config_json) {
  if (config_eos) {
    if (*config_eos < 0 || *config_eos >= bpe.vocab_size())
      throw InputError(config_json.string(), "eos_token_id " + std::to_string(*config_eos) + " is outside the tokenizer's " +
                                                 std::to_string(bpe.vocab_size()) + " ids (" + tokenizer_json.string() + ")");
    return static_cast<std::int32_t>(*config_eos);
  }
  const auto file = tokenizer_json.parent_path() / "tokenizer_config.json";
  std::error_code error;
  if (!std::filesystem::exists(file, error))
    throw InputError(config_json.string(), "has no eos_token_id, and there is no " + file.string() + " naming an eos_token");
  const nlohmann::json json = read_json_file(file);
  std::string token;
  if (json.is_object() && json.contains("eos_token")) {
    const auto& eos = json["eos_token"];
    if (eos.is_string()) token = eos.get<std::string>();
    else if (eos.is_object() && eos.contains("content") && eos["content"].is_string()) token = eos["content"].get<std::string>();
  }
  if (token.empty()) throw InputError(file.string(), "names no eos_token (and " + config_json.string() + " has no eos_token_id)");
  const std::int32_t id = bpe.id_of(token);
  if (id < 0) throw InputError(file.string(), "eos_token \"" + token + "\" is not a token of " + tokenizer_json.string());
  return id;
}

}  // namespace xmc
