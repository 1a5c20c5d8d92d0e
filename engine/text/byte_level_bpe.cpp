#include "engine/text/byte_level_bpe.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <queue>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/text/well_formed_utf8.h"

namespace xmc {
namespace {

using Json = nlohmann::json;

// The pre-tokenizer patterns this file matches by hand (as they appear in tokenizer.json files).
constexpr std::string_view kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// A well-formed text's code points with the byte offset of each (offsets has one more entry: the end).
struct CodePoints {
  std::vector<std::int32_t> cps;
  std::vector<std::size_t> offsets;
};

CodePoints decode(std::string_view text) {
  CodePoints out;
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  std::size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(bytes + i, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {  // not reached for replace_ill_formed_utf8() text; kept total
      cp = 0xFFFD;
      n = 1;
    }
    out.cps.push_back(cp);
    out.offsets.push_back(i);
    i += static_cast<std::size_t>(n);
  }
  out.offsets.push_back(text.size());
  return out;
}

bool is_letter(std::int32_t cp) {
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool is_number(std::int32_t cp) {
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

/// \s: Unicode White_Space.
bool is_space(std::int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_newline(std::int32_t cp) { return cp == '\r' || cp == '\n'; }
/// [^\s\p{L}\p{N}]
bool is_other(std::int32_t cp) { return !is_space(cp) && !is_letter(cp) && !is_number(cp); }

std::int32_t ascii_lower(std::int32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp; }

/// 's 't 're 've 'm 'll 'd at `i` (ASCII case folded when `any_case`): its length, or 0.
std::size_t contraction_at(const std::vector<std::int32_t>& c, std::size_t i, bool any_case) {
  if (c[i] != '\'' || i + 1 >= c.size()) return 0;
  const auto at = [&](std::size_t k) { return k < c.size() ? (any_case ? ascii_lower(c[k]) : c[k]) : -1; };
  for (const std::string_view tail : {"s", "t", "re", "ve", "m", "ll", "d"}) {
    bool match = true;
    for (std::size_t k = 0; k < tail.size() && match; ++k) match = at(i + 1 + k) == tail[k];
    if (match) return 1 + tail.size();
  }
  return 0;
}

/// The end of the run of `pred` code points starting at `i`.
template <class Pred>
std::size_t run_end(const std::vector<std::int32_t>& c, std::size_t i, Pred&& pred) {
  while (i < c.size() && pred(c[i])) ++i;
  return i;
}

/// The whitespace alternatives the Qwen and GPT-2 patterns end with, at `i` (c[i] is whitespace):
/// [Qwen only] \s*[\r\n]+ | \s+(?!\S) | \s+. Returns the end of the match.
std::size_t whitespace_match(const std::vector<std::int32_t>& c, std::size_t i, bool newline_alternative) {
  const std::size_t j = run_end(c, i, is_space);
  if (newline_alternative) {
    // \s* backtracks to the last newline of the run; [\r\n]+ then ends right after it.
    for (std::size_t k = j; k > i; --k)
      if (is_newline(c[k - 1])) return k;
  }
  if (j == c.size()) return j;  // (?!\S) holds at the end
  if (j - i >= 2) return j - 1;  // \s+(?!\S): leave the last space to the word after it
  return j;                      // \s+
}

/// One match of the Qwen / Llama 3 pattern at `i`: its end (every position matches something).
std::size_t qwen_match(const std::vector<std::int32_t>& c, std::size_t i, std::int64_t digits) {
  if (const std::size_t n = contraction_at(c, i, /*any_case=*/true)) return i + n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (is_letter(c[i])) return run_end(c, i, is_letter);
  if (!is_newline(c[i]) && !is_number(c[i]) && i + 1 < c.size() && is_letter(c[i + 1])) return run_end(c, i + 1, is_letter);
  // \p{N} or \p{N}{1,3}
  if (is_number(c[i])) {
    std::size_t j = i;
    while (j < c.size() && static_cast<std::int64_t>(j - i) < digits && is_number(c[j])) ++j;
    return j;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  const std::size_t start = c[i] == ' ' && i + 1 < c.size() && is_other(c[i + 1]) ? i + 1 : i;
  if (is_other(c[start])) return run_end(c, run_end(c, start, is_other), is_newline);
  return whitespace_match(c, i, /*newline_alternative=*/true);
}

/// One match of GPT-2's pattern at `i`.
std::size_t gpt2_match(const std::vector<std::int32_t>& c, std::size_t i) {
  if (const std::size_t n = contraction_at(c, i, /*any_case=*/false)) return i + n;
  const std::size_t after_space = c[i] == ' ' && i + 1 < c.size() ? i + 1 : i;
  for (const auto pred : {is_letter, is_number, is_other})  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
    if (pred(c[after_space])) return run_end(c, after_space, pred);
  return whitespace_match(c, i, /*newline_alternative=*/false);
}

/// GPT-2's printable stand-in for each byte (bytes_to_unicode), UTF-8 encoded.
std::vector<std::string> byte_characters() {
  std::vector<std::int32_t> code(256, -1);
  for (int b = '!'; b <= '~'; ++b) code[static_cast<std::size_t>(b)] = b;
  for (int b = 0xA1; b <= 0xAC; ++b) code[static_cast<std::size_t>(b)] = b;
  for (int b = 0xAE; b <= 0xFF; ++b) code[static_cast<std::size_t>(b)] = b;
  std::int32_t next = 256;
  for (auto& c : code)
    if (c < 0) c = next++;
  std::vector<std::string> out(256);
  for (std::size_t b = 0; b < 256; ++b) {
    utf8proc_uint8_t buffer[4];
    const auto n = utf8proc_encode_char(code[b], buffer);
    out[b].assign(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
  }
  return out;
}

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

/// model.vocab and model.merges of a tokenizer.json, streamed: building them as a JSON document (300,000 nodes
/// for Qwen) took most of the load time.
class VocabAndMerges : public nlohmann::json_sax<Json> {
 public:
  std::vector<std::pair<std::string, std::int64_t>> vocab;
  std::string bad_vocab_entry;  ///< the first token whose id is not a whole number (empty: none)
  bool saw_vocab = false, saw_merges = false;
  struct MergeEntry {
    std::vector<std::string> parts;  ///< ["a b"] (older files) or ["a", "b"]
    bool malformed = false;
  };
  std::vector<MergeEntry> merges;

  bool null() override { return value(false, 0); }
  bool boolean(bool) override { return value(false, 0); }
  bool number_integer(number_integer_t v) override { return value(true, v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v <= static_cast<number_unsigned_t>(INT64_MAX), static_cast<std::int64_t>(v)); }
  bool number_float(number_float_t, const string_t&) override { return value(false, 0); }
  bool binary(binary_t&) override { return value(false, 0); }
  bool string(string_t& text) override {
    if (in_merges() && depth_ == 3) merges.push_back({{text}, false});
    else if (in_merges() && depth_ == 4) merges.back().parts.push_back(text);
    else return value(false, 0);
    return true;
  }
  bool start_object(std::size_t) override {
    if (in_model_key("vocab")) saw_vocab = true;
    if (in_merges() && depth_ >= 3) mark_merge_malformed();
    return open('{');
  }
  bool start_array(std::size_t) override {
    if (in_model_key("merges")) saw_merges = true;
    if (in_merges() && depth_ == 3) merges.push_back({{}, false});
    else if (in_merges() && depth_ > 3) mark_merge_malformed();
    return open('[');
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) top_key_ = k;
    if (depth_ == 2) model_key_ = k;
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override { throw e; }

 private:
  bool in_model_key(const char* name) const { return depth_ == 2 && top_key_ == "model" && model_key_ == name; }
  bool in_vocab() const { return depth_ >= 3 && top_key_ == "model" && model_key_ == "vocab" && vocab_open_; }
  bool in_merges() const { return depth_ >= 3 && top_key_ == "model" && model_key_ == "merges" && merges_open_; }
  void mark_merge_malformed() {
    if (!merges.empty()) merges.back().malformed = true;
    else merges.push_back({{}, true});
  }
  bool value(bool whole_number, std::int64_t v) {
    if (in_vocab() && depth_ == 3) {
      if (!whole_number && bad_vocab_entry.empty()) bad_vocab_entry = key_.empty() ? std::string("(empty token)") : key_;
      vocab.emplace_back(key_, whole_number ? v : -1);
    } else if (in_merges()) {
      mark_merge_malformed();
    }
    return true;
  }
  bool open(char kind) {
    if (depth_ == 2 && top_key_ == "model") {
      vocab_open_ = model_key_ == "vocab" && kind == '{';
      merges_open_ = model_key_ == "merges" && kind == '[';
    }
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (depth_ == 2) vocab_open_ = merges_open_ = false;
    if (depth_ <= 1) model_key_.clear();
    return true;
  }

  int depth_ = 0;
  bool vocab_open_ = false, merges_open_ = false;
  std::string top_key_, model_key_, key_;
};

}  // namespace

ByteLevelBpe ByteLevelBpe::from_file(const std::filesystem::path& tokenizer_json) {
  const std::string file = tokenizer_json.string();
  require_regular_file(tokenizer_json);
  std::ifstream in(tokenizer_json, std::ios::binary);
  if (!in) throw InputError(file, "no such file or not readable");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Json j;
  VocabAndMerges streamed;
  try {
    // The document without model.vocab and model.merges (dropped as they are read), then those two streamed.
    int depth_of_model = -1;
    j = Json::parse(text, [&](int depth, Json::parse_event_t event, Json& parsed) {
      if (event == Json::parse_event_t::key && depth == 1 && parsed == "model") depth_of_model = 2;
      if (event == Json::parse_event_t::key && depth == depth_of_model && (parsed == "vocab" || parsed == "merges")) return false;
      return true;
    });
    Json::sax_parse(text, &streamed);
  } catch (const Json::exception& e) {
    throw InputError(file, std::string("not valid JSON: ") + e.what());
  }
  const auto refuse = [&](const std::string& why) { return InputError(file, why); };
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) throw refuse("no \"model\" object: not a tokenizer.json");
  const Json& model = j["model"];
  const std::string type = model.value("type", std::string());
  if (type != "BPE") throw refuse("the model is of type \"" + type + "\", not BPE (byte-level BPE reads BPE models only)");
  ByteLevelBpe bpe;

  // Vocabulary and merges.
  if (!streamed.saw_vocab) throw refuse("model.vocab is missing or not an object");
  if (!streamed.bad_vocab_entry.empty()) throw refuse("model.vocab[\"" + streamed.bad_vocab_entry + "\"] is not an id");
  bpe.vocab_.reserve(streamed.vocab.size());
  for (const auto& [token, id] : streamed.vocab) {
    if (id < 0 || id > INT32_MAX) throw refuse("model.vocab[\"" + token + "\"] is not an id");
    bpe.vocab_.emplace(token, static_cast<std::int32_t>(id));
    bpe.vocab_size_ = std::max<std::int64_t>(bpe.vocab_size_, id + 1);
  }
  if (!streamed.saw_merges) throw refuse("model.merges is missing or not a list");
  std::int32_t rank = 0;
  bpe.merges_.reserve(streamed.merges.size());
  for (const VocabAndMerges::MergeEntry& merge : streamed.merges) {
    std::string left, right;
    if (!merge.malformed && merge.parts.size() == 1) {  // "a b" (older files)
      const std::string& both = merge.parts[0];
      const auto space = both.find(' ', 1);
      if (space == std::string::npos) throw refuse("merge " + std::to_string(rank) + " \"" + both + "\" is not two tokens");
      left = both.substr(0, space);
      right = both.substr(space + 1);
    } else if (!merge.malformed && merge.parts.size() == 2) {  // ["a", "b"]
      left = merge.parts[0];
      right = merge.parts[1];
    } else {
      throw refuse("merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto l = bpe.vocab_.find(left), r = bpe.vocab_.find(right), m = bpe.vocab_.find(left + right);
    if (l == bpe.vocab_.end() || r == bpe.vocab_.end() || m == bpe.vocab_.end())
      throw refuse("merge " + std::to_string(rank) + " (\"" + left + "\", \"" + right + "\") names a token the vocabulary lacks");
    bpe.merges_.emplace(pair_key(l->second, r->second), Merge{rank, m->second});  // the first (lowest) rank of a pair counts
    ++rank;
  }
  bpe.ignore_merges_ = model.value("ignore_merges", false);
  const std::vector<std::string> characters = byte_characters();
  for (std::size_t b = 0; b < 256; ++b) {
    const auto it = bpe.vocab_.find(characters[b]);
    bpe.byte_ids_[b] = it == bpe.vocab_.end() ? -1 : it->second;
  }

  // Added tokens.
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const Json& t : j["added_tokens"]) {
      if (!t.is_object() || !t.contains("content") || !t["content"].is_string() || !t.contains("id") || !t["id"].is_number_integer())
        throw refuse("an added token has no content or id");
      AddedToken token{t["content"].get<std::string>(), t["id"].get<std::int32_t>(), t.value("special", false), t.value("normalized", false),
                       t.value("lstrip", false),          t.value("rstrip", false),     t.value("single_word", false)};
      if (token.content.empty() || token.id < 0) throw refuse("an added token is empty or has a negative id");
      if (token.special) bpe.special_ids_.push_back(token.id);
      bpe.vocab_size_ = std::max<std::int64_t>(bpe.vocab_size_, std::int64_t{token.id} + 1);
      bpe.added_.push_back(std::move(token));
    }
    std::sort(bpe.special_ids_.begin(), bpe.special_ids_.end());
  }

  // Normaliser.
  const auto add_normalizer = [&](const Json& n, auto& self) -> void {
    if (n.is_null()) return;
    const std::string kind = n.is_object() ? n.value("type", std::string()) : std::string();
    if (kind == "NFC") bpe.normalizers_.push_back(Normalization::Nfc);
    else if (kind == "NFD") bpe.normalizers_.push_back(Normalization::Nfd);
    else if (kind == "NFKC") bpe.normalizers_.push_back(Normalization::Nfkc);
    else if (kind == "NFKD") bpe.normalizers_.push_back(Normalization::Nfkd);
    else if (kind == "Lowercase") bpe.normalizers_.push_back(Normalization::Lowercase);
    else if (kind == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array())
      for (const Json& inner : n["normalizers"]) self(inner, self);
    else
      throw refuse("the normalizer \"" + kind + "\" is not one byte-level BPE knows (NFC, NFD, NFKC, NFKD, Lowercase, Sequence)");
  };
  if (j.contains("normalizer")) add_normalizer(j["normalizer"], add_normalizer);

  // Pre-tokenizer: a Split by a known pattern then ByteLevel without its regex, or ByteLevel with GPT-2's regex.
  const Json pre = j.value("pre_tokenizer", Json());
  std::vector<Json> steps;
  if (pre.is_object() && pre.value("type", std::string()) == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array())
    steps.assign(pre["pretokenizers"].begin(), pre["pretokenizers"].end());
  else if (pre.is_object())
    steps.push_back(pre);
  bool split_known = false, byte_level = false;
  for (const Json& step : steps) {
    const std::string kind = step.is_object() ? step.value("type", std::string()) : std::string();
    if (kind == "Split") {
      const Json pattern = step.value("pattern", Json());
      const std::string regex = pattern.is_object() ? pattern.value("Regex", std::string()) : std::string();
      if (step.value("behavior", std::string()) != "Isolated" || step.value("invert", false))
        throw refuse("the Split pre-tokenizer's behaviour is not Isolated");
      if (regex == kQwenPattern) {
        bpe.split_ = Split::Qwen;
        bpe.digits_per_piece_ = 1;
      } else if (regex == kLlama3Pattern) {
        bpe.split_ = Split::Qwen;
        bpe.digits_per_piece_ = 3;
      } else if (regex == kGpt2Pattern) {
        bpe.split_ = Split::Gpt2;
      } else {
        throw refuse("the Split pattern " + regex + " is not one byte-level BPE knows (Qwen2/Qwen3's, Llama 3's, GPT-2's)");
      }
      split_known = true;
    } else if (kind == "ByteLevel") {
      byte_level = true;
      bpe.add_prefix_space_ = step.value("add_prefix_space", false);
      if (step.value("use_regex", true)) {
        if (split_known) throw refuse("a Split and ByteLevel's own regex both split the text");
        bpe.split_ = Split::Gpt2;
        split_known = true;
      }
    } else {
      throw refuse("the pre-tokenizer \"" + kind + "\" is not one byte-level BPE knows (Split, ByteLevel, Sequence of them)");
    }
  }
  if (!byte_level || !split_known) throw refuse("no ByteLevel pre-tokenizer: not a byte-level BPE tokenizer");
  for (std::size_t b = 0; b < 256; ++b)
    if (bpe.byte_ids_[b] < 0) throw refuse("the vocabulary lacks byte " + std::to_string(b) + "'s character: not a byte-level vocabulary");
  return bpe;
}

std::int32_t ByteLevelBpe::id_of(std::string_view token) const {
  for (const AddedToken& t : added_)
    if (t.content == token) return t.id;
  const auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? -1 : it->second;
}

bool ByteLevelBpe::is_special(std::int32_t id) const { return std::binary_search(special_ids_.begin(), special_ids_.end(), id); }

std::string ByteLevelBpe::normalize(std::string_view text) const {
  std::string out(text);
  for (const Normalization n : normalizers_) {
    if (n == Normalization::Lowercase) {
      const CodePoints c = decode(out);
      std::string lowered;
      for (const std::int32_t cp : c.cps) {
        utf8proc_uint8_t buffer[4];
        const auto size = utf8proc_encode_char(utf8proc_tolower(cp), buffer);
        lowered.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(size));
      }
      out = std::move(lowered);
      continue;
    }
    int options = UTF8PROC_STABLE;
    if (n == Normalization::Nfc || n == Normalization::Nfkc) options |= UTF8PROC_COMPOSE;
    else options |= UTF8PROC_DECOMPOSE;
    if (n == Normalization::Nfkc || n == Normalization::Nfkd) options |= UTF8PROC_COMPAT;
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t size = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(out.data()), static_cast<utf8proc_ssize_t>(out.size()),
                                               &mapped, static_cast<utf8proc_option_t>(options));
    if (size >= 0) out.assign(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(size));
    std::free(mapped);
  }
  return out;
}

void ByteLevelBpe::encode_piece(std::string_view piece, std::vector<std::int32_t>& ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    std::string mapped;
    static const std::vector<std::string> characters = byte_characters();
    for (const unsigned char b : piece) mapped += characters[b];
    if (const auto it = vocab_.find(mapped); it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  // One symbol per byte, in a linked list; merges lowest rank first, leftmost among equals (as the reference does).
  const std::size_t n = piece.size();
  std::vector<std::int32_t> symbol(n), next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    symbol[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
    prev[i] = static_cast<std::int32_t>(i) - 1;
  }
  using Candidate = std::pair<std::int32_t, std::int32_t>;  // rank, position of the left symbol
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](std::int32_t left) {
    if (left < 0 || next[static_cast<std::size_t>(left)] < 0) return;
    const auto it = merges_.find(pair_key(symbol[static_cast<std::size_t>(left)], symbol[static_cast<std::size_t>(next[static_cast<std::size_t>(left)])]));
    if (it != merges_.end()) queue.emplace(it->second.rank, left);
  };
  for (std::size_t i = 0; i + 1 < n; ++i) consider(static_cast<std::int32_t>(i));
  while (!queue.empty()) {
    const auto [rank, left] = queue.top();
    queue.pop();
    const auto l = static_cast<std::size_t>(left);
    if (!alive[l] || next[l] < 0) continue;
    const auto r = static_cast<std::size_t>(next[l]);
    const auto it = merges_.find(pair_key(symbol[l], symbol[r]));
    if (it == merges_.end() || it->second.rank != rank) continue;  // a stale candidate: the pair changed since
    symbol[l] = it->second.merged;
    alive[r] = false;
    next[l] = next[r];
    if (next[r] >= 0) prev[static_cast<std::size_t>(next[r])] = left;
    consider(prev[l]);
    consider(left);
  }
  for (std::int32_t i = 0; i >= 0; i = next[static_cast<std::size_t>(i)]) ids.push_back(symbol[static_cast<std::size_t>(i)]);
}

void ByteLevelBpe::encode_plain(std::string_view normalized, std::vector<std::int32_t>& ids) const {
  std::string text;
  if (add_prefix_space_ && !normalized.empty() && normalized.front() != ' ') text = " ";
  text += normalized;
  const CodePoints c = decode(text);
  for (std::size_t i = 0; i < c.cps.size();) {
    const std::size_t end = split_ == Split::Qwen ? qwen_match(c.cps, i, digits_per_piece_) : gpt2_match(c.cps, i);
    encode_piece(std::string_view(text).substr(c.offsets[i], c.offsets[end] - c.offsets[i]), ids);
    i = end;
  }
}

void ByteLevelBpe::encode_segment(std::string_view text, bool normalized_tokens, std::vector<std::int32_t>& ids) const {
  // Added tokens of this kind (matched before or after normalisation), leftmost, longest at a position.
  std::size_t start = 0, pos = 0;
  const auto flush = [&](std::size_t end) {
    if (end <= start) return;
    const std::string_view rest = text.substr(start, end - start);
    if (normalized_tokens) encode_plain(rest, ids);
    else encode_segment(normalize(rest), /*normalized_tokens=*/true, ids);
  };
  while (pos < text.size()) {
    const AddedToken* best = nullptr;
    for (const AddedToken& t : added_)
      if (t.normalized == normalized_tokens && text.compare(pos, t.content.size(), t.content) == 0 && (!best || t.content.size() > best->content.size()))
        best = &t;
    if (best && best->single_word) {
      const CodePoints before = decode(text.substr(start, pos - start)), after = decode(text.substr(pos + best->content.size(), 4));
      const auto word = [](std::int32_t cp) { return is_letter(cp) || is_number(cp) || cp == '_'; };
      if ((!before.cps.empty() && word(before.cps.back())) || (!after.cps.empty() && word(after.cps.front()))) best = nullptr;
    }
    if (!best) {
      ++pos;
      continue;
    }
    std::size_t left = pos, right = pos + best->content.size();
    if (best->lstrip)
      while (left > start && (text[left - 1] == ' ' || text[left - 1] == '\t' || text[left - 1] == '\n' || text[left - 1] == '\r')) --left;
    if (best->rstrip)
      while (right < text.size() && (text[right] == ' ' || text[right] == '\t' || text[right] == '\n' || text[right] == '\r')) ++right;
    flush(left);
    ids.push_back(best->id);
    start = pos = right;
  }
  flush(text.size());
}

std::vector<std::int32_t> ByteLevelBpe::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  encode_segment(replace_ill_formed_utf8(text), /*normalized_tokens=*/false, ids);
  return ids;
}

TokenizedCorpus ByteLevelBpeTokenizer::tokenize(const std::vector<std::string>& texts) const {
  TokenizedCorpus corpus;
  for (const std::string& text : texts) {
    std::vector<std::int32_t> ids = bpe_.encode(text);
    if (max_len_ > 0 && static_cast<std::int64_t>(ids.size()) > max_len_) ids.resize(static_cast<std::size_t>(max_len_));
    corpus.append(ids);
  }
  return corpus;
}

std::int64_t ByteLevelBpeTokenizer::known_tokens(std::span<const std::int32_t> tokens) const {
  return std::count_if(tokens.begin(), tokens.end(), [this](std::int32_t id) { return !bpe_.is_special(id); });
}

namespace {

bool is_bpe_json(const std::filesystem::path& path) {
  const auto file = tokenizer_json_of(path);
  return file.extension() == ".json" && tokenizer_json_model_type(file) == "BPE";
}

}  // namespace

std::filesystem::path tokenizer_json_of(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) ? path / "tokenizer.json" : path;
}

TokenizerInfo bpe_tokenizer_info() {
  return {.name = "bpe",
          .description = "byte-level BPE (Qwen2/Qwen3, Llama 3, GPT-2): a tokenizer.json of model type BPE, or a model folder holding one",
          .reads = is_bpe_json,
          .make = [](const TokenizerSource& source) -> std::unique_ptr<TextTokenizer> {
            return std::make_unique<ByteLevelBpeTokenizer>(ByteLevelBpe::from_file(tokenizer_json_of(source.file)), source.max_len);
          }};
}

}  // namespace xmc
