#include "engine/text/vocabulary.h"

#include <algorithm>
#include <cmath>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/core/parse_count.h"
#include "engine/core/utf8.h"
#include "engine/text/word_tokenizer.h"

namespace xmc {
namespace {

constexpr std::string_view kHeader = "xmc-vocabulary";
constexpr std::string_view kPad = "[PAD]";
constexpr std::string_view kUnk = "[UNK]";

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct WordCount {
  std::int64_t count = 0;     // occurrences in all texts
  std::int64_t df = 0;        // texts containing the word
  std::int64_t last_doc = -1;  // last text that counted towards df
};

}  // namespace

Vocabulary::Vocabulary() {
  add_word(std::string(kPad), 0);
  add_word(std::string(kUnk), 0);
}

void Vocabulary::add_word(std::string word, std::int64_t df) {
  ids_.emplace(word, static_cast<std::int32_t>(words_.size()));
  words_.push_back(std::move(word));
  dfs_.push_back(df);
}

Vocabulary Vocabulary::build(const std::vector<std::string>& texts, VocabularyOptions options) {
  if (options.min_count < 1)
    throw ConfigError("vocabulary min_count must be at least 1, got " + std::to_string(options.min_count));
  if (options.max_size < 0)
    throw ConfigError("vocabulary max_size must be 0 (no cap) or positive, got " + std::to_string(options.max_size));

  std::unordered_map<std::string, WordCount, StringHash, std::equal_to<>> counts;
  for (std::size_t doc = 0; doc < texts.size(); ++doc) {
    WordTokenizer::for_each_word(texts[doc], [&](std::string_view word) {
      auto it = counts.find(word);
      if (it == counts.end()) it = counts.emplace(std::string(word), WordCount{}).first;
      WordCount& c = it->second;
      ++c.count;
      if (c.last_doc != static_cast<std::int64_t>(doc)) {
        c.last_doc = static_cast<std::int64_t>(doc);
        ++c.df;
      }
    });
  }

  std::vector<const std::pair<const std::string, WordCount>*> kept;
  kept.reserve(counts.size());
  for (const auto& entry : counts)
    if (entry.second.count >= options.min_count) kept.push_back(&entry);
  std::sort(kept.begin(), kept.end(), [](const auto* a, const auto* b) {
    if (a->second.count != b->second.count) return a->second.count > b->second.count;
    return a->first < b->first;
  });
  if (options.max_size > 0 && static_cast<std::int64_t>(kept.size()) > options.max_size)
    kept.resize(static_cast<std::size_t>(options.max_size));
  if (kept.size() + 2 > static_cast<std::size_t>(INT32_MAX))
    throw ConfigError("vocabulary has more words than 32-bit ids can hold; set max_size");

  Vocabulary vocab;
  vocab.num_documents_ = static_cast<std::int64_t>(texts.size());
  vocab.words_.reserve(kept.size() + 2);
  vocab.dfs_.reserve(kept.size() + 2);
  vocab.ids_.reserve(kept.size() + 2);
  for (const auto* entry : kept) vocab.add_word(entry->first, entry->second.df);
  return vocab;
}

std::int32_t Vocabulary::id_of(std::string_view word) const {
  const auto it = ids_.find(word);
  return it == ids_.end() ? kUnkId : it->second;
}

double Vocabulary::idf(std::int32_t id) const {
  const auto df = static_cast<double>(document_frequency(id));
  return std::log((1.0 + static_cast<double>(num_documents_)) / (1.0 + df)) + 1.0;
}

std::vector<float> Vocabulary::idf_table() const {
  std::vector<float> table(words_.size());
  for (std::size_t id = 0; id < table.size(); ++id) table[id] = static_cast<float>(idf(static_cast<std::int32_t>(id)));
  return table;
}

std::vector<std::int32_t> Vocabulary::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  WordTokenizer::for_each_word(text, [&](std::string_view word) { ids.push_back(id_of(word)); });
  return ids;
}

TokenizedCorpus Vocabulary::tokenize_corpus(const std::vector<std::string>& texts) const {
  TokenizedCorpus corpus;
  corpus.offsets.reserve(texts.size() + 1);
  for (const auto& text : texts) {
    WordTokenizer::for_each_word(text, [&](std::string_view word) { corpus.token_ids.push_back(id_of(word)); });
    corpus.offsets.push_back(static_cast<std::int64_t>(corpus.token_ids.size()));
  }
  return corpus;
}

void Vocabulary::save(const std::filesystem::path& path) const {
  AtomicFileWriter out(path);
  auto& s = out.stream();
  s << kHeader << '\t' << num_documents_ << '\n';
  for (std::size_t id = 0; id < words_.size(); ++id) s << words_[id] << '\t' << dfs_[id] << '\n';
  out.commit();
}

Vocabulary Vocabulary::load(const std::filesystem::path& path) {
  LineReader reader(path);
  const std::string file = path.string();
  std::string_view line;
  if (!reader.next(line)) throw InputError(file, "is empty; expected a vocabulary written by xmc");
  const auto header_tab = line.find('\t');
  std::int64_t n = 0;
  if (header_tab == std::string_view::npos || line.substr(0, header_tab) != kHeader ||
      !parse_count(line.substr(header_tab + 1), n))
    throw InputError(file, 1, "expected the header \"xmc-vocabulary<TAB>NUMBER_OF_DOCUMENTS\"");

  Vocabulary vocab;
  vocab.words_.clear();
  vocab.dfs_.clear();
  vocab.ids_.clear();
  vocab.num_documents_ = n;
  while (reader.next(line)) {
    const std::size_t line_no = reader.line_number();
    const auto t = line.find('\t');
    if (t == std::string_view::npos || line.find('\t', t + 1) != std::string_view::npos)
      throw InputError(file, line_no, "expected \"WORD<TAB>DOCUMENT_FREQUENCY\"");
    const std::string_view word = line.substr(0, t);
    std::int64_t df = 0;
    if (word.empty()) throw InputError(file, line_no, "empty word");
    if (!is_valid_utf8(word)) throw InputError(file, line_no, "word is not valid UTF-8");
    if (!parse_count(line.substr(t + 1), df))
      throw InputError(file, line_no, "document frequency \"" + std::string(line.substr(t + 1)) +
                                          "\" is not a non-negative integer");
    if (df > n)
      throw InputError(file, line_no, "document frequency " + std::to_string(df) + " exceeds the " +
                                          std::to_string(n) + " documents of the header");
    const auto id = vocab.words_.size();
    if (id == kPadId && word != kPad) throw InputError(file, line_no, "expected \"[PAD]\" as the first word (id 0)");
    if (id == kUnkId && word != kUnk) throw InputError(file, line_no, "expected \"[UNK]\" as the second word (id 1)");
    if (const auto it = vocab.ids_.find(word); it != vocab.ids_.end())
      throw InputError(file, line_no, "word \"" + std::string(word) + "\" already appeared on line " +
                                          std::to_string(static_cast<std::size_t>(it->second) + 2));
    if (id >= static_cast<std::size_t>(INT32_MAX)) throw InputError(file, line_no, "too many words for 32-bit ids");
    vocab.add_word(std::string(word), df);
  }
  if (vocab.words_.size() < 2) throw InputError(file, "has no \"[PAD]\" and \"[UNK]\" lines after the header");
  return vocab;
}

}  // namespace xmc
