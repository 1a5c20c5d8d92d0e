#include "engine/text/tfidf_vectorizer.h"

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

constexpr std::string_view kHeader = "xmc-tfidf";
constexpr int kMaxNgrams = 3;

struct NgramCount {
  std::int64_t df = 0;
  std::int64_t last_doc = -1;
};

}  // namespace

std::int64_t ngram_words(std::string_view ngram) { return 1 + std::count(ngram.begin(), ngram.end(), ' '); }

void TfidfVectorizer::for_each_ngram(std::string_view text, const std::function<void(std::string_view)>& fn) const {
  // The last ngram_length_ - 1 words, oldest first, and a buffer the n-grams ending at a word are built in.
  std::vector<std::string> previous;
  std::string joined;
  WordTokenizer::for_each_word(text, [&](std::string_view word) {
    fn(word);
    for (std::size_t back = 1; back <= previous.size(); ++back) {
      joined.clear();
      for (std::size_t i = previous.size() - back; i < previous.size(); ++i) {
        joined += previous[i];
        joined += ' ';
      }
      joined += word;
      fn(joined);
    }
    if (ngram_length_ > 1) {
      if (static_cast<int>(previous.size()) == ngram_length_ - 1) previous.erase(previous.begin());
      previous.emplace_back(word);
    }
  });
}

void TfidfVectorizer::add(std::string ngram, std::int64_t df) {
  ids_.emplace(ngram, static_cast<std::int32_t>(ngrams_.size()));
  ngrams_.push_back(std::move(ngram));
  dfs_.push_back(df);
}

void TfidfVectorizer::finish_idf() {
  idf_.resize(dfs_.size());
  for (std::size_t id = 0; id < dfs_.size(); ++id)
    idf_[id] = static_cast<float>(std::log((1.0 + static_cast<double>(num_documents_)) / (1.0 + static_cast<double>(dfs_[id]))) + 1.0);
}

TfidfVectorizer TfidfVectorizer::fit(const std::vector<std::string>& texts, TfidfOptions options, Progress& progress) {
  if (options.ngrams < 1 || options.ngrams > kMaxNgrams)
    throw ConfigError("tf-idf ngrams must be 1, 2 or 3, got " + std::to_string(options.ngrams));
  if (options.min_df < 1) throw ConfigError("tf-idf min_df must be at least 1, got " + std::to_string(options.min_df));
  if (options.max_features < 0) throw ConfigError("tf-idf max_features must be 0 (no cap) or positive, got " + std::to_string(options.max_features));

  TfidfVectorizer out;
  out.ngram_length_ = options.ngrams;
  out.num_documents_ = static_cast<std::int64_t>(texts.size());
  std::unordered_map<std::string, NgramCount, StringHash, std::equal_to<>> counts;
  progress.start("counting n-grams", out.num_documents_);
  for (std::size_t doc = 0; doc < texts.size(); ++doc) {
    out.for_each_ngram(texts[doc], [&](std::string_view ngram) {
      auto it = counts.find(ngram);
      if (it == counts.end()) it = counts.emplace(std::string(ngram), NgramCount{}).first;
      if (it->second.last_doc != static_cast<std::int64_t>(doc)) {
        it->second.last_doc = static_cast<std::int64_t>(doc);
        ++it->second.df;
      }
    });
    if ((doc + 1) % 4096 == 0) {
      if (progress.cancelled()) throw Cancelled();
      progress.update(static_cast<std::int64_t>(doc + 1));
    }
  }
  progress.update(out.num_documents_);
  progress.finish();

  std::vector<const std::pair<const std::string, NgramCount>*> kept;
  kept.reserve(counts.size());
  for (const auto& entry : counts) {
    const std::int64_t least = ngram_words(entry.first) == 1 ? options.min_df : std::max<std::int64_t>(options.min_df, 2);
    if (entry.second.df >= least) kept.push_back(&entry);
  }
  std::sort(kept.begin(), kept.end(), [](const auto* a, const auto* b) {
    if (a->second.df != b->second.df) return a->second.df > b->second.df;
    return a->first < b->first;
  });
  if (options.max_features > 0 && static_cast<std::int64_t>(kept.size()) > options.max_features)
    kept.resize(static_cast<std::size_t>(options.max_features));
  if (kept.size() > static_cast<std::size_t>(INT32_MAX)) throw ConfigError("tf-idf: more n-grams than 32-bit ids can hold; set max_features");
  out.ngrams_.reserve(kept.size());
  out.dfs_.reserve(kept.size());
  out.ids_.reserve(kept.size());
  for (const auto* entry : kept) out.add(entry->first, entry->second.df);
  out.finish_idf();
  return out;
}

TokenizedCorpus TfidfVectorizer::tokenize(const std::vector<std::string>& texts) const {
  TokenizedCorpus corpus;
  corpus.offsets.reserve(texts.size() + 1);
  for (const auto& text : texts) {
    for_each_ngram(text, [&](std::string_view ngram) {
      const auto it = ids_.find(ngram);
      if (it != ids_.end()) corpus.token_ids.push_back(it->second);
    });
    corpus.offsets.push_back(static_cast<std::int64_t>(corpus.token_ids.size()));
  }
  return corpus;
}

CsrMatrix TfidfVectorizer::features(const TokenizedCorpus& corpus, std::int64_t begin, std::int64_t end) const {
  if (begin < 0 || end < begin || end > corpus.size())
    throw Error("tf-idf features: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") are outside a corpus of " +
                std::to_string(corpus.size()) + " texts");
  CsrMatrix out;
  out.rows = 0;
  out.cols = num_features();
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> cols;
  std::vector<float> vals;
  for (std::int64_t row = begin; row < end; ++row) {
    const auto tokens = corpus.tokens(row);
    ids.assign(tokens.begin(), tokens.end());
    std::sort(ids.begin(), ids.end());
    cols.clear();
    vals.clear();
    double norm = 0;
    for (std::size_t i = 0; i < ids.size();) {
      std::size_t j = i;
      while (j < ids.size() && ids[j] == ids[i]) ++j;
      if (ids[i] < 0 || ids[i] >= out.cols)
        throw Error("tf-idf features: token id " + std::to_string(ids[i]) + " of text " + std::to_string(row) + " is not a feature id (0 .. " +
                    std::to_string(out.cols - 1) + ")");
      const double weight = (1.0 + std::log(static_cast<double>(j - i))) * idf_[static_cast<std::size_t>(ids[i])];
      cols.push_back(ids[i]);
      vals.push_back(static_cast<float>(weight));
      norm += weight * weight;
      i = j;
    }
    if (norm > 0) {
      const auto scale = static_cast<float>(1.0 / std::sqrt(norm));
      for (float& v : vals) v *= scale;
    }
    out.append_row(cols, vals);
  }
  return out;
}

CsrMatrix TfidfVectorizer::transform(const std::vector<std::string>& texts) const {
  const TokenizedCorpus corpus = tokenize(texts);
  return features(corpus, 0, corpus.size());
}

void TfidfVectorizer::save(const std::filesystem::path& path) const {
  AtomicFileWriter out(path);
  auto& s = out.stream();
  s << kHeader << '\t' << ngram_length_ << '\t' << num_documents_ << '\n';
  for (std::size_t id = 0; id < ngrams_.size(); ++id) s << ngrams_[id] << '\t' << dfs_[id] << '\n';
  out.commit();
}

TfidfVectorizer TfidfVectorizer::with_unit_idf(const std::vector<std::string>& words) {
  TfidfVectorizer out;
  out.ngram_length_ = 1;
  out.num_documents_ = 1;  // df 1 of 1 document: idf = ln(2 / 2) + 1 = 1
  for (const std::string& word : words) {
    if (word.empty() || word.find_first_of(" \t\n\r") != std::string::npos || !is_valid_utf8(word))
      throw Error("tf-idf vocabulary: \"" + word.substr(0, 40) + "\" is not one word");
    if (out.ids_.count(word)) throw Error("tf-idf vocabulary: \"" + word.substr(0, 40) + "\" appears twice");
    out.add(word, 1);
  }
  out.finish_idf();
  return out;
}

TfidfVectorizer TfidfVectorizer::load(const std::filesystem::path& path) {
  LineReader reader(path);
  const std::string file = path.string();
  std::string_view line;
  if (!reader.next(line)) throw InputError(file, "is empty; expected a tf-idf vocabulary written by xmc");
  const auto first_tab = line.find('\t');
  const auto second_tab = first_tab == std::string_view::npos ? first_tab : line.find('\t', first_tab + 1);
  std::int64_t ngrams = 0;
  std::int64_t docs = 0;
  if (second_tab == std::string_view::npos || line.substr(0, first_tab) != kHeader ||
      !parse_count(line.substr(first_tab + 1, second_tab - first_tab - 1), ngrams) || !parse_count(line.substr(second_tab + 1), docs) ||
      ngrams < 1 || ngrams > kMaxNgrams)
    throw InputError(file, 1, "expected the header \"xmc-tfidf<TAB>NGRAMS (1 to 3)<TAB>NUMBER_OF_DOCUMENTS\"");
  TfidfVectorizer out;
  out.ngram_length_ = static_cast<int>(ngrams);
  out.num_documents_ = docs;
  while (reader.next(line)) {
    const std::size_t line_no = reader.line_number();
    const auto t = line.find('\t');
    if (t == std::string_view::npos || line.find('\t', t + 1) != std::string_view::npos)
      throw InputError(file, line_no, "expected \"NGRAM<TAB>DOCUMENT_FREQUENCY\"");
    const std::string_view ngram = line.substr(0, t);
    std::int64_t df = 0;
    if (ngram.empty() || ngram.front() == ' ' || ngram.back() == ' ' || ngram.find("  ") != std::string_view::npos)
      throw InputError(file, line_no, "expected an n-gram of words separated by single spaces, got \"" + std::string(ngram) + "\"");
    if (!is_valid_utf8(ngram)) throw InputError(file, line_no, "n-gram is not valid UTF-8");
    if (ngram_words(ngram) > ngrams)
      throw InputError(file, line_no, "\"" + std::string(ngram) + "\" has more than the header's " + std::to_string(ngrams) + " words");
    if (!parse_count(line.substr(t + 1), df) || df > docs)
      throw InputError(file, line_no, "document frequency \"" + std::string(line.substr(t + 1)) + "\" is not an integer from 0 to the header's " +
                                          std::to_string(docs) + " documents");
    if (const auto it = out.ids_.find(ngram); it != out.ids_.end())
      throw InputError(file, line_no, "\"" + std::string(ngram) + "\" already appeared on line " + std::to_string(it->second + 2));
    if (out.ngrams_.size() >= static_cast<std::size_t>(INT32_MAX)) throw InputError(file, line_no, "too many n-grams for 32-bit ids");
    out.add(std::string(ngram), df);
  }
  out.finish_idf();
  return out;
}

}  // namespace xmc
