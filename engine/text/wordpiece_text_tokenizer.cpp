#include "engine/text/wordpiece_text_tokenizer.h"
#include "engine/core/regular_file.h"

#include <algorithm>
#include <fstream>

namespace xmc {
namespace {

/// A tokenizer.json whose model is WordPiece (false for anything unreadable: reads() never throws).
bool is_wordpiece_json(const std::filesystem::path& file) { return tokenizer_json_model_type(file) == "WordPiece"; }

/// A vocab.txt of one token per line that lists the markers WordPiece needs ([CLS] among them).
bool is_wordpiece_vocab(const std::filesystem::path& file) {
  if (!is_regular_file_path(file)) return false;  // a FIFO would block the reader
  std::ifstream in(file, std::ios::binary);
  std::string line;
  for (int n = 0; n < 200000 && std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "[CLS]") return true;
    if (line.find('\t') != std::string::npos) return false;  // a words vocabulary (word<TAB>count)
  }
  return false;
}

bool reads_wordpiece(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return (std::filesystem::exists(path / "tokenizer.json", error) && is_wordpiece_json(path / "tokenizer.json")) ||
           (std::filesystem::exists(path / "vocab.txt", error) && is_wordpiece_vocab(path / "vocab.txt"));
  return path.extension() == ".json" ? is_wordpiece_json(path) : is_wordpiece_vocab(path);
}

}  // namespace

std::int64_t WordPieceTextTokenizer::known_tokens(std::span<const std::int32_t> tokens) const {
  return std::count_if(tokens.begin(), tokens.end(), [this](std::int32_t id) {
    return id != tokenizer_.pad_id() && id != tokenizer_.unk_id() && id != tokenizer_.cls_id() && id != tokenizer_.sep_id();
  });
}

TokenizerInfo wordpiece_tokenizer_info() {
  return {.name = "wordpiece",
          .description = "BERT's WordPiece, [CLS] ... [SEP] per text: a model folder, its vocab.txt or tokenizer.json",
          .reads = reads_wordpiece,
          .make = [](const TokenizerSource& source) -> std::unique_ptr<TextTokenizer> {
            WordPieceOptions options;
            if (source.max_len > 0) options.max_len = source.max_len;
            std::error_code error;
            return std::make_unique<WordPieceTextTokenizer>(std::filesystem::is_directory(source.file, error)
                                                                ? WordPieceTokenizer::from_folder(source.file, options)
                                                                : WordPieceTokenizer::from_file(source.file, options));
          }};
}

}  // namespace xmc
