#include "engine/text/vocabulary_tokenizer.h"
#include "engine/core/regular_file.h"

#include <algorithm>
#include <fstream>

namespace xmc {

TokenizedCorpus VocabularyTokenizer::tokenize(const std::vector<std::string>& texts) const { return vocabulary_.tokenize_corpus(texts); }

std::int64_t VocabularyTokenizer::known_tokens(std::span<const std::int32_t> tokens) const {
  return std::count_if(tokens.begin(), tokens.end(), [](std::int32_t id) { return id != Vocabulary::kPadId && id != Vocabulary::kUnkId; });
}

TokenizerInfo words_tokenizer_info() {
  return {.name = "words",
          .description = "a word vocabulary (lower-cased words, [UNK] for the rest): the bow encoder's, a run's vocab.txt",
          .reads =
              [](const std::filesystem::path& file) {
                if (!is_regular_file_path(file)) return false;  // a FIFO would block the reader
                std::ifstream in(file, std::ios::binary);
                std::string first(15, '\0');
                return in.read(first.data(), 15) && first == "xmc-vocabulary\t";
              },
          .make = [](const TokenizerSource& source) -> std::unique_ptr<TextTokenizer> {
            return std::make_unique<VocabularyTokenizer>(Vocabulary::load(source.file));
          }};
}

}  // namespace xmc
