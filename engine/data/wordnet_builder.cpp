#include "engine/data/wordnet_builder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/core/trim.h"

namespace xmc {
namespace {

constexpr std::size_t kProgressEvery = 4096;

/// One data line of data.noun, as parsed.
struct RawSynset {
  std::uint64_t offset = 0;
  std::size_t line = 0;
  std::string text;
  std::vector<std::uint64_t> hypernyms;  ///< offsets of `@` / `@i` targets, unique
};

/// Space-separated tokens of the part of a line before the gloss.
class Tokens {
 public:
  explicit Tokens(std::string_view s) : rest_(s) {}
  bool next(std::string_view& tok) {
    const std::size_t b = rest_.find_first_not_of(' ');
    if (b == std::string_view::npos) {
      rest_ = {};
      return false;
    }
    rest_.remove_prefix(b);
    const std::size_t e = std::min(rest_.find(' '), rest_.size());
    tok = rest_.substr(0, e);
    rest_.remove_prefix(e);
    return true;
  }

 private:
  std::string_view rest_;
};

/// Parses all of `tok` as an unsigned number of at most `max_digits` digits in `base`.
bool parse_number(std::string_view tok, int base, std::size_t max_digits, std::uint64_t& out) {
  if (tok.empty() || tok.size() > max_digits) return false;
  if (tok.front() == '+' || tok.front() == '-') return false;
  const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out, base);
  return ec == std::errc{} && ptr == tok.data() + tok.size();
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

/// Parses one data line (wndb(5)):
///   synset_offset lex_filenum ss_type w_cnt word lex_id [word lex_id...] p_cnt [ptr...] | gloss
/// with w_cnt 2 hex digits, p_cnt 3 decimal digits, ptr = "symbol offset pos source/target".
RawSynset parse_data_line(std::string_view line, const std::string& path, std::size_t line_no,
                          std::vector<std::string_view>& lemmas) {
  auto fail = [&](const std::string& reason) -> InputError { return InputError(path, line_no, reason); };
  const std::size_t bar = line.find('|');
  if (bar == std::string_view::npos) throw fail("no ' | gloss' part: not a WordNet data line");
  Tokens tokens(line.substr(0, bar));
  const std::string_view gloss = trim(line.substr(bar + 1));

  RawSynset s;
  s.line = line_no;
  std::string_view tok;
  if (!tokens.next(tok) || !parse_number(tok, 10, 10, s.offset))
    throw fail("synset offset " + quoted(tok) + " is not a decimal number");
  std::uint64_t number = 0;
  if (!tokens.next(tok) || !parse_number(tok, 10, 2, number))
    throw fail("lex_filenum " + quoted(tok) + " is not a 2-digit decimal number");
  if (!tokens.next(tok)) throw fail("line ends before the synset type");
  if (tok != "n") throw fail("synset type " + quoted(tok) + " is not a noun ('n')");

  std::uint64_t w_cnt = 0;
  if (!tokens.next(tok) || !parse_number(tok, 16, 2, w_cnt))
    throw fail("word count " + quoted(tok) + " is not a 2-digit hexadecimal number");
  if (w_cnt == 0) throw fail("word count is 0: a synset needs at least one word");
  lemmas.clear();
  for (std::uint64_t i = 0; i < w_cnt; ++i) {
    std::string_view word;
    if (!tokens.next(word))
      throw fail("line ends after " + std::to_string(i) + " of " + std::to_string(w_cnt) + " words");
    if (!tokens.next(tok))
      throw fail("word " + quoted(word) + " has no lex_id (line ends after " + std::to_string(i) + " of " +
                 std::to_string(w_cnt) + " words)");
    if (!parse_number(tok, 16, 2, number))
      throw fail("lex_id " + quoted(tok) + " of word " + quoted(word) +
                 " is not a hexadecimal digit (is the word count " + std::to_string(w_cnt) + " right?)");
    lemmas.push_back(word);
  }

  std::uint64_t p_cnt = 0;
  if (!tokens.next(tok) || !parse_number(tok, 10, 3, p_cnt))
    throw fail("pointer count " + quoted(tok) + " is not a 3-digit decimal number (is the word count " +
               std::to_string(w_cnt) + " right?)");
  for (std::uint64_t i = 0; i < p_cnt; ++i) {
    const std::string where = "pointer " + std::to_string(i + 1) + " of " + std::to_string(p_cnt);
    std::string_view symbol, target, pos, source_target;
    if (!tokens.next(symbol) || !tokens.next(target) || !tokens.next(pos) || !tokens.next(source_target))
      throw fail(where + " is incomplete (a pointer is 'symbol offset pos source/target')");
    std::uint64_t target_offset = 0;
    if (!parse_number(target, 10, 10, target_offset))
      throw fail(where + ": synset offset " + quoted(target) + " is not a decimal number");
    if (pos.size() != 1 || std::string_view("nvasr").find(pos.front()) == std::string_view::npos)
      throw fail(where + ": part of speech " + quoted(pos) + " is not one of n, v, a, s, r");
    if (source_target.size() != 4 || !parse_number(source_target, 16, 4, number))
      throw fail(where + ": source/target " + quoted(source_target) + " is not 4 hexadecimal digits");
    if ((symbol == "@" || symbol == "@i") && pos == "n") s.hypernyms.push_back(target_offset);
  }
  if (tokens.next(tok))
    throw fail("unexpected " + quoted(tok) + " after the " + std::to_string(p_cnt) +
               " pointers (does the pointer count match?)");
  std::sort(s.hypernyms.begin(), s.hypernyms.end());
  s.hypernyms.erase(std::unique(s.hypernyms.begin(), s.hypernyms.end()), s.hypernyms.end());
  s.text = wordnet_synset_text(lemmas, gloss);
  return s;
}

std::vector<RawSynset> read_data_noun(const std::filesystem::path& file, Progress& progress) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw InputError(file.string(),
                     "no such file; the WordNet noun data comes with Debian's wordnet-base package "
                     "(apt-get install wordnet-base)");
  LineReader reader(file);
  progress.start("Reading WordNet nouns", static_cast<std::int64_t>(reader.file_size()));
  if (progress.cancelled()) throw Cancelled();
  std::vector<RawSynset> synsets;
  std::vector<std::string_view> lemmas;
  std::string_view line;
  while (reader.next(line)) {
    if (reader.line_number() % kProgressEvery == 0) {
      if (progress.cancelled()) throw Cancelled();
      progress.update(static_cast<std::int64_t>(reader.bytes_read()));
    }
    if (line.starts_with("  ")) continue;  // license header
    if (trim(line).empty()) continue;
    synsets.push_back(parse_data_line(line, reader.path(), reader.line_number(), lemmas));
  }
  progress.update(static_cast<std::int64_t>(reader.bytes_read()));
  progress.finish();
  if (synsets.empty()) throw InputError(file.string(), "has no noun synsets (is it WordNet's data.noun?)");
  return synsets;
}

/// Uniform integer in [0, n), n > 0, by rejection on the raw 64-bit output: the same sequence on every
/// platform (std::uniform_int_distribution is implementation-defined).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  while (true) {
    const std::uint64_t x = rng();
    if (x >= threshold) return x % n;
  }
}

/// Hypernym graph over synset indices (CSR) and its transitive closure (sorted ancestor indices).
struct Closure {
  std::vector<std::int64_t> begin, end;
  std::vector<std::int32_t> ancestors;
  std::span<const std::int32_t> of(std::size_t v) const {
    return {ancestors.data() + begin[v], static_cast<std::size_t>(end[v] - begin[v])};
  }
};

Closure hypernym_closure(const std::vector<RawSynset>& synsets, const std::vector<std::int64_t>& parent_ptr,
                         const std::vector<std::int32_t>& parents, const std::string& path, Progress& progress) {
  const std::size_t n = synsets.size();
  Closure c;
  c.begin.assign(n, 0);
  c.end.assign(n, 0);
  c.ancestors.reserve(n * 10);
  enum : std::uint8_t { kNew, kOpen, kDone };
  std::vector<std::uint8_t> state(n, kNew);
  std::vector<std::pair<std::int32_t, std::int64_t>> stack;  // node, next parent position
  std::vector<std::int32_t> scratch;
  progress.start("Computing hypernym ancestors", static_cast<std::int64_t>(n));
  if (progress.cancelled()) throw Cancelled();
  std::size_t done = 0;
  for (std::size_t root = 0; root < n; ++root) {
    if (state[root] != kNew) continue;
    state[root] = kOpen;
    stack.emplace_back(static_cast<std::int32_t>(root), parent_ptr[root]);
    while (!stack.empty()) {
      const auto v = static_cast<std::size_t>(stack.back().first);
      const std::int64_t k = stack.back().second;
      if (k < parent_ptr[v + 1]) {
        ++stack.back().second;
        const auto p = static_cast<std::size_t>(parents[static_cast<std::size_t>(k)]);
        if (state[p] == kOpen)
          throw InputError(path, synsets[v].line,
                           "hypernym cycle: synset " + std::to_string(synsets[v].offset) +
                               " reaches itself through synset " + std::to_string(synsets[p].offset));
        if (state[p] == kNew) {
          state[p] = kOpen;
          stack.emplace_back(static_cast<std::int32_t>(p), parent_ptr[p]);
        }
        continue;
      }
      // All parents are done: ancestors(v) = parents(v) ∪ ancestors(parents(v)).
      scratch.clear();
      for (std::int64_t i = parent_ptr[v]; i < parent_ptr[v + 1]; ++i) {
        const auto p = static_cast<std::size_t>(parents[static_cast<std::size_t>(i)]);
        scratch.push_back(static_cast<std::int32_t>(p));
        const auto anc = c.of(p);
        scratch.insert(scratch.end(), anc.begin(), anc.end());
      }
      std::sort(scratch.begin(), scratch.end());
      scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
      c.begin[v] = static_cast<std::int64_t>(c.ancestors.size());
      c.ancestors.insert(c.ancestors.end(), scratch.begin(), scratch.end());
      c.end[v] = static_cast<std::int64_t>(c.ancestors.size());
      state[v] = kDone;
      stack.pop_back();
      if (++done % kProgressEvery == 0) {
        if (progress.cancelled()) throw Cancelled();
        progress.update(static_cast<std::int64_t>(done));
      }
    }
  }
  progress.update(static_cast<std::int64_t>(n));
  progress.finish();
  return c;
}

}  // namespace

std::string wordnet_synset_text(const std::vector<std::string_view>& lemmas, std::string_view gloss) {
  std::string text;
  for (std::size_t i = 0; i < lemmas.size(); ++i) {
    if (i > 0) text += ", ";
    for (const char ch : lemmas[i]) text += ch == '_' ? ' ' : ch;
  }
  if (!gloss.empty()) {
    text += ": ";
    text += gloss;
  }
  return text;
}

Dataset build_wordnet_dataset(const WordnetBuildOptions& options, Progress& progress) {
  if (options.max_items < 0)
    throw ConfigError("max_items must be >= 0 (0 = all), got " + std::to_string(options.max_items));
  if (!(options.train_fraction > 0.0 && options.train_fraction <= 1.0))
    throw ConfigError("train_fraction must be in (0, 1], got " + std::to_string(options.train_fraction));
  if (options.labels != "ancestors" && options.labels != "direct")
    throw ConfigError("labels must be ancestors or direct, got \"" + options.labels + "\"");
  if (options.min_depth < 0) throw ConfigError("min_depth must be >= 0, got " + std::to_string(options.min_depth));
  const std::string path = options.data_noun.string();

  // 1. Parse, order by synset offset, resolve hypernym pointers to indices.
  std::vector<RawSynset> synsets = read_data_noun(options.data_noun, progress);
  const auto by_offset = [](const RawSynset& a, const RawSynset& b) { return a.offset < b.offset; };
  if (!std::is_sorted(synsets.begin(), synsets.end(), by_offset))
    std::stable_sort(synsets.begin(), synsets.end(), by_offset);
  for (std::size_t i = 1; i < synsets.size(); ++i)
    if (synsets[i].offset == synsets[i - 1].offset)
      throw InputError(path, std::max(synsets[i].line, synsets[i - 1].line),
                       "duplicate synset offset " + std::to_string(synsets[i].offset) + " (also on line " +
                           std::to_string(std::min(synsets[i].line, synsets[i - 1].line)) + ")");
  if (synsets.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw InputError(path, "has too many synsets");

  const std::size_t n_synsets = synsets.size();
  std::vector<std::int64_t> parent_ptr(n_synsets + 1, 0);
  std::vector<std::int32_t> parents;
  for (std::size_t v = 0; v < n_synsets; ++v) {
    for (const std::uint64_t target : synsets[v].hypernyms) {
      const auto it = std::lower_bound(synsets.begin(), synsets.end(), target,
                                       [](const RawSynset& s, std::uint64_t off) { return s.offset < off; });
      if (it == synsets.end() || it->offset != target)
        throw InputError(path, synsets[v].line,
                         "hypernym pointer to synset offset " + std::to_string(target) +
                             ", which is not in the file");
      parents.push_back(static_cast<std::int32_t>(it - synsets.begin()));
    }
    parent_ptr[v + 1] = static_cast<std::int64_t>(parents.size());
  }

  // 2. Transitive closure over @ and @i (a DAG), memoised per synset.
  const Closure closure = hypernym_closure(synsets, parent_ptr, parents, path, progress);

  // Depth: the fewest hypernym steps to a root, by relaxation (the graph is a DAG: it settles within its height).
  std::vector<std::int64_t> depth(n_synsets, 0);
  for (std::size_t v = 0; v < n_synsets; ++v)
    if (parent_ptr[v + 1] > parent_ptr[v]) depth[v] = std::numeric_limits<std::int64_t>::max();
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t v = 0; v < n_synsets; ++v)
      for (std::int64_t p = parent_ptr[v]; p < parent_ptr[v + 1]; ++p) {
        const std::int64_t via = depth[static_cast<std::size_t>(parents[static_cast<std::size_t>(p)])];
        if (via != std::numeric_limits<std::int64_t>::max() && via + 1 < depth[v]) {
          depth[v] = via + 1;
          changed = true;
        }
      }
  }
  // The candidate labels of each synset, ascending: its direct hypernyms or all its ancestors, none shallower than
  // min_depth.
  const bool direct = options.labels == "direct";
  std::vector<std::vector<std::int32_t>> candidate_labels(n_synsets);
  for (std::size_t v = 0; v < n_synsets; ++v) {
    if (parent_ptr[v + 1] == parent_ptr[v]) continue;  // a root: no hypernym, no item
    auto& out = candidate_labels[v];
    const auto add = [&](std::int32_t a) {
      if (depth[static_cast<std::size_t>(a)] >= options.min_depth) out.push_back(a);
    };
    if (direct)
      for (std::int64_t p = parent_ptr[v]; p < parent_ptr[v + 1]; ++p) add(parents[static_cast<std::size_t>(p)]);
    else
      for (const std::int32_t a : closure.of(v)) add(a);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }

  // 3. Items = synsets with at least one candidate label; seeded sample and train/test split.
  std::vector<std::int32_t> items;
  for (std::size_t v = 0; v < n_synsets; ++v)
    if (!candidate_labels[v].empty()) items.push_back(static_cast<std::int32_t>(v));
  if (items.empty())
    throw InputError(path, options.min_depth > 0 ? "no synset has a hypernym of depth " + std::to_string(options.min_depth) + " or more: nothing to build"
                                                 : "no synset has a hypernym ('@' or '@i' pointer): nothing to build");
  const std::size_t n_avail = items.size();
  const std::size_t k = options.max_items > 0
                            ? std::min(n_avail, static_cast<std::size_t>(options.max_items))
                            : n_avail;
  std::mt19937_64 rng(options.seed);
  for (std::size_t i = 0; i < k && i + 1 < n_avail; ++i) {  // partial Fisher–Yates: a uniform ordered sample
    const std::size_t j = i + static_cast<std::size_t>(uniform_below(rng, n_avail - i));
    std::swap(items[i], items[j]);
  }
  const auto n_train = static_cast<std::size_t>(
      std::clamp<long long>(std::llround(options.train_fraction * static_cast<double>(k)), 0,
                            static_cast<long long>(k)));
  std::vector<std::int32_t> train(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(n_train));
  std::vector<std::int32_t> test(items.begin() + static_cast<std::ptrdiff_t>(n_train),
                                 items.begin() + static_cast<std::ptrdiff_t>(k));
  std::sort(train.begin(), train.end());
  std::sort(test.begin(), test.end());

  // 4. Labels = ancestors of the train items, in synset-offset order.
  progress.start("Building WordNet dataset", static_cast<std::int64_t>(k));
  if (progress.cancelled()) throw Cancelled();
  std::vector<std::int32_t> label_of(n_synsets, -1);
  for (const std::int32_t v : train)
    for (const std::int32_t a : candidate_labels[static_cast<std::size_t>(v)]) label_of[static_cast<std::size_t>(a)] = 0;
  Dataset d;
  std::int32_t n_labels = 0;
  for (std::size_t v = 0; v < n_synsets; ++v) {
    if (label_of[v] < 0) continue;
    label_of[v] = n_labels++;
    d.label_text.push_back(synsets[v].text);
  }

  std::size_t done = 0;
  auto tick = [&] {
    if (++done % kProgressEvery == 0) {
      if (progress.cancelled()) throw Cancelled();
      progress.update(static_cast<std::int64_t>(done));
    }
  };
  // Ancestors are sorted by synset index and label ids grow with it, so rows come out sorted.
  auto fill = [&](const std::vector<std::int32_t>& rows, std::vector<std::string>& text, CsrMatrix& m,
                  std::vector<FilterPair>* filter) {
    m.rows = static_cast<std::int64_t>(rows.size());
    m.cols = n_labels;
    m.indptr.assign(1, 0);
    m.indptr.reserve(rows.size() + 1);
    text.reserve(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto v = static_cast<std::size_t>(rows[r]);
      text.push_back(synsets[v].text);
      for (const std::int32_t a : candidate_labels[v]) {
        const std::int32_t label = label_of[static_cast<std::size_t>(a)];
        if (label < 0) continue;
        m.indices.push_back(label);
        m.values.push_back(1.0f);
      }
      m.indptr.push_back(static_cast<std::int64_t>(m.indices.size()));
      // The item's own synset as a label has the query's text: a reciprocal pair never to predict.
      if (filter != nullptr && label_of[v] >= 0) filter->push_back({static_cast<std::int64_t>(r), label_of[v]});
      tick();
    }
  };
  std::vector<FilterPair> filter;
  fill(train, d.train_text, d.train_labels, nullptr);
  fill(test, d.test_text, d.test_labels, &filter);
  d.test_filter = FilterPairs(std::move(filter));
  progress.update(static_cast<std::int64_t>(k));
  progress.finish();

  const bool sampled = k < n_avail;
  d.meta.name = sampled ? "wordnet-nouns-" + std::to_string(k) : "wordnet-nouns";
  d.meta.source = "WordNet 3.0 noun hypernyms (wordnet-base), " + std::to_string(k) + " items, seed " +
                  std::to_string(options.seed) + (direct ? ", direct hypernyms" : "") +
                  (options.min_depth > 0 ? ", min depth " + std::to_string(options.min_depth) : std::string());
  d.meta.propensity = PropensityParams{0.55, 1.5};
  return d;
}

}  // namespace xmc
