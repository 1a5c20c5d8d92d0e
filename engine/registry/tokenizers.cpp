// The registered tokenizers, from XMC_FOR_EACH_TOKENIZER, and building one by name or by the file it reads.
#include <system_error>

#include "engine/core/error.h"
#include "engine/registry/component_list.h"
#include "engine/registry/find_by_name.h"
#include "engine/text/tokenizer_info.h"

namespace xmc {

#define XMC_DECLARE_TOKENIZER_INFO(name) TokenizerInfo name##_tokenizer_info();
XMC_FOR_EACH_TOKENIZER(XMC_DECLARE_TOKENIZER_INFO)
#undef XMC_DECLARE_TOKENIZER_INFO

namespace {

std::string known_tokenizers() {
  std::string known;
  for (const TokenizerInfo& t : registered_tokenizers()) known += (known.empty() ? "" : ", ") + t.name;
  return known;
}

}  // namespace

const std::vector<TokenizerInfo>& registered_tokenizers() {
#define XMC_TOKENIZER_INFO(name) name##_tokenizer_info(),
  static const std::vector<TokenizerInfo> tokenizers{XMC_FOR_EACH_TOKENIZER(XMC_TOKENIZER_INFO)};
#undef XMC_TOKENIZER_INFO
  return tokenizers;
}

const TokenizerInfo& tokenizer_info(const std::string& name) {
  return find_by_name(registered_tokenizers(), name,
                      [&](const std::string& known) { return "tokenizer: \"" + name + "\" is not a known tokenizer (" + known + ")"; });
}

std::unique_ptr<TextTokenizer> make_tokenizer(const TokenizerSource& source, const std::string& type) {
  std::error_code error;
  if (!std::filesystem::exists(source.file, error)) throw InputError(source.file.string(), "no such file or folder");
  if (!type.empty()) return tokenizer_info(type).make(source);
  for (const TokenizerInfo& t : registered_tokenizers())
    if (t.reads(source.file)) return t.make(source);
  throw ConfigError("tokenizer: no tokenizer reads " + source.file.string() + " (known: " + known_tokenizers() +
                    "; a run's vocab.txt, a BERT vocab.txt, a WordPiece tokenizer.json or a model folder holding one)");
}

}  // namespace xmc
