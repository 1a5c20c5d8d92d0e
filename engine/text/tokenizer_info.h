#pragma once
// What the product knows of each registered tokenizer (plain C++): its name, one line of help, which files it
// reads and its factory. engine/registry/component_list.h registers each once (XMC_FOR_EACH_TOKENIZER); an
// encoder's factory builds the tokenizer it is paired with, and `xmc tokenize` builds any of them by name
// or by the file given.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/text/text_tokenizer.h"

namespace xmc {

/// Where a tokenizer is read from.
struct TokenizerSource {
  std::filesystem::path file;  ///< the tokenizer's file (vocab.txt, tokenizer.json, ...) or a model folder holding it
  std::int64_t max_len = 0;    ///< ids per text at most, markers included (0 = the tokenizer's default)
};

struct TokenizerInfo {
  std::string name;         ///< "words", "wordpiece"
  std::string description;  ///< one line for help texts
  /// Whether `file` is this tokenizer's kind (by its header or model type; never throws), so that a file
  /// given without a type finds its tokenizer.
  std::function<bool(const std::filesystem::path& file)> reads;
  /// Throws InputError naming the file for one it cannot read, ConfigError for a bad max_len.
  std::function<std::unique_ptr<TextTokenizer>(const TokenizerSource& source)> make;
};

/// The model type of a Hugging Face tokenizer.json ("BPE", "WordPiece", "Unigram"), read without parsing the
/// rest of the file; "" for a file that is not one (never throws).
std::string tokenizer_json_model_type(const std::filesystem::path& file);

/// Every registered tokenizer, in the order help texts list them (engine/registry).
const std::vector<TokenizerInfo>& registered_tokenizers();
/// The tokenizer named `name`; throws ConfigError naming the known ones.
const TokenizerInfo& tokenizer_info(const std::string& name);
/// The tokenizer of `source.file`: the one named `type`, or, when `type` is empty, the first registered one
/// that reads the file. Throws InputError for a missing file, ConfigError when no tokenizer reads it.
std::unique_ptr<TextTokenizer> make_tokenizer(const TokenizerSource& source, const std::string& type = "");

}  // namespace xmc
