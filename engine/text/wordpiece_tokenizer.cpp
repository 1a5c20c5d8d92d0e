#include "engine/text/wordpiece_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/core/utf8.h"
#include "engine/core/regular_file.h"

namespace xmc {

using json = nlohmann::json;

// What the files (and the caller's options) say about normalisation and special tokens, before the
// vocabulary is read. Unset fields fall back to what the vocabulary file says, then to BERT's defaults.
struct WordPieceTokenizer::Settings {
  WordPieceOptions options;
  std::optional<bool> lowercase;             // tokenizer_config.json do_lower_case
  std::optional<bool> strip_accents;         // tokenizer_config.json strip_accents (non-null)
  std::optional<bool> handle_chinese_chars;  // tokenizer_config.json tokenize_chinese_chars
  std::optional<std::string> unk, cls, sep, pad, mask;  // tokenizer_config.json *_token
};

// Per-call working buffers, reused across the texts of one thread.
struct WordPieceTokenizer::Scratch {
  std::vector<std::int32_t> word;  // code points of the current whitespace-separated word
  bool word_ascii = true;
  std::string pieces;              // the basic tokens (after punctuation splitting), back to back
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end) of each basic token in pieces
  std::vector<std::int32_t> cps;   // normalisation buffers
  std::vector<std::int32_t> cps2;
  std::string utf8;
};

namespace {

// ---- character classes (as transformers' BasicTokenizer) -------------------------------------------

bool is_ascii_punctuation(std::int32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
}

bool is_punctuation(std::int32_t cp) {
  if (cp < 0x80) return is_ascii_punctuation(cp);
  const auto cat = utf8proc_category(cp);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_other_category(utf8proc_category_t cat) {  // C*: Cc, Cf, Cs, Co, Cn
  return cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CO;
}

// _is_control: category C* except tab, LF and CR.
bool is_control(std::int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  if (cp < 0x80) return cp < 32 || cp == 127;
  return is_other_category(utf8proc_category(cp));
}

// _is_whitespace: space, tab, LF, CR and category Zs (cleaning turns these into a space).
bool is_clean_whitespace(std::int32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  return cp >= 0x80 && utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

// Separators of str.split(): the above plus VT, FF, FS..US, NEL, Zl and Zp.
bool is_split_whitespace(std::int32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x1F);
  if (cp == 0x85) return true;
  const auto cat = utf8proc_category(cp);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

// _is_chinese_char: the CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana).
bool is_chinese_char(std::int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Full lower-case mapping of one code point (str.lower() / char::to_lowercase): U+0130 is the only
// unconditional mapping to two code points.
void append_lower(std::int32_t cp, std::vector<std::int32_t>& out) {
  if (cp == 0x130) {
    out.push_back('i');
    out.push_back(0x307);
  } else {
    out.push_back(utf8proc_tolower(cp));
  }
}

void append_utf8(std::int32_t cp, std::string& out) {
  utf8proc_uint8_t bytes[4];
  const auto len = utf8proc_encode_char(cp, bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(len));
}

// utf8proc_decompose of `utf8` (valid UTF-8) into `out` with `options`; then composed when asked.
void normalize(const std::string& utf8, utf8proc_option_t options, bool compose, std::vector<std::int32_t>& out) {
  const auto* str = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  const auto len = static_cast<utf8proc_ssize_t>(utf8.size());
  out.resize(utf8.size() + 8);
  auto n = utf8proc_decompose(str, len, out.data(), static_cast<utf8proc_ssize_t>(out.size()), options);
  if (n > static_cast<utf8proc_ssize_t>(out.size())) {
    out.resize(static_cast<std::size_t>(n));
    n = utf8proc_decompose(str, len, out.data(), n, options);
  }
  if (n >= 0 && compose) n = utf8proc_normalize_utf32(out.data(), n, options);
  out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));  // n < 0 cannot happen for valid UTF-8
}

// ---- files ------------------------------------------------------------------------------------------

json read_json(const std::filesystem::path& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "cannot open file for reading");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string content = buffer.str();
  try {
    return parse_bounded_json(content);
  } catch (const json::parse_error& e) {
    const auto upto = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, content.size());
    const auto line = 1 + static_cast<std::size_t>(std::count(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(upto), '\n'));
    throw InputError(path.string(), line, std::string("invalid JSON: ") + e.what());
  }
}

// A special token name in tokenizer_config.json: a string or an AddedToken object {"content": ...}.
std::optional<std::string> token_name(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

std::optional<bool> optional_bool(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::string json_type_name(const json& object) {
  const auto it = object.find("type");
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

// ---- construction -----------------------------------------------------------------------------------

WordPieceTokenizer WordPieceTokenizer::from_file(const std::filesystem::path& path, WordPieceOptions options) {
  Settings settings;
  settings.options = options;
  return path.extension() == ".json" ? from_tokenizer_json(path, settings) : from_vocab_txt(path, settings);
}

WordPieceTokenizer WordPieceTokenizer::from_folder(const std::filesystem::path& folder, WordPieceOptions options) {
  Settings settings;
  settings.options = options;
  const auto config_path = folder / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) {
    const json config = read_json(config_path);
    if (!config.is_object()) throw InputError(config_path.string(), "expected a JSON object");
    settings.lowercase = optional_bool(config, "do_lower_case");
    settings.strip_accents = optional_bool(config, "strip_accents");
    settings.handle_chinese_chars = optional_bool(config, "tokenize_chinese_chars");
    settings.unk = token_name(config, "unk_token");
    settings.cls = token_name(config, "cls_token");
    settings.sep = token_name(config, "sep_token");
    settings.pad = token_name(config, "pad_token");
    settings.mask = token_name(config, "mask_token");
  }
  if (std::filesystem::exists(folder / "tokenizer.json", ec)) return from_tokenizer_json(folder / "tokenizer.json", settings);
  if (std::filesystem::exists(folder / "vocab.txt", ec)) return from_vocab_txt(folder / "vocab.txt", settings);
  throw InputError(folder.string(), std::filesystem::is_directory(folder, ec)
                                        ? "has neither tokenizer.json nor vocab.txt"
                                        : "no such folder (expected a Hugging Face model folder)");
}

WordPieceTokenizer WordPieceTokenizer::from_vocab_txt(const std::filesystem::path& path, const Settings& settings) {
  WordPieceTokenizer t;
  LineReader reader(path);
  std::string_view line;
  while (reader.next(line)) {
    if (!is_valid_utf8(line)) throw InputError(path.string(), reader.line_number(), "token is not valid UTF-8");
    if (t.tokens_.size() >= static_cast<std::size_t>(INT32_MAX))
      throw InputError(path.string(), reader.line_number(), "too many tokens for 32-bit ids");
    const auto id = static_cast<std::int32_t>(t.tokens_.size());
    t.tokens_.emplace_back(line);
    t.ids_.insert_or_assign(t.tokens_.back(), id);  // a repeated token keeps its last id, as transformers
  }
  if (t.tokens_.empty()) throw InputError(path.string(), "is empty; expected one WordPiece token per line");
  t.lowercase_ = settings.options.lowercase.value_or(settings.lowercase.value_or(true));
  t.strip_accents_ = settings.strip_accents.value_or(t.lowercase_);
  t.clean_text_ = true;
  t.handle_chinese_chars_ = settings.handle_chinese_chars.value_or(true);
  t.finish(path.string(), settings);
  return t;
}

WordPieceTokenizer WordPieceTokenizer::from_tokenizer_json(const std::filesystem::path& path, const Settings& settings) {
  const std::string file = path.string();
  const json root = read_json(path);
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
    throw InputError(file, "has no \"model\" object; expected a Hugging Face tokenizer.json");
  const json& model = root["model"];
  const std::string type = json_type_name(model);
  if (type != "WordPiece")
    throw InputError(file, "tokenizer model type is \"" + type +
                               "\"; only WordPiece tokenizers (BERT, DistilBERT, MiniLM) are supported here");
  if (!model.contains("vocab") || !model["vocab"].is_object())
    throw InputError(file, "model.vocab must be an object mapping each token to its id");

  WordPieceTokenizer t;
  // Ids index a table: they must stay below the number of tokens the file lists (real vocabularies number
  // their tokens densely), or one id of 2^31 - 2 would allocate two billion entries.
  std::size_t listed = model["vocab"].size();
  if (const auto it = root.find("added_tokens"); it != root.end() && it->is_array()) listed += it->size();
  const auto id_limit = static_cast<std::int64_t>(std::min<std::size_t>(listed, INT32_MAX));
  const auto add_token = [&](const std::string& token, const json& id_value, const std::string& where) {
    if (!is_valid_utf8(token)) throw InputError(file, where + ": a token is not valid UTF-8");
    if (!id_value.is_number_integer() || id_value.get<std::int64_t>() < 0 || id_value.get<std::int64_t>() >= id_limit)
      throw InputError(file, where + ": id of \"" + to_single_line(token.substr(0, 40)) + "\" must be an integer in [0, " + std::to_string(id_limit) +
                                 ") (the file lists " + std::to_string(listed) + " entries), got " + id_value.dump());
    const auto id = id_value.get<std::int32_t>();
    if (static_cast<std::size_t>(id) >= t.tokens_.size()) t.tokens_.resize(static_cast<std::size_t>(id) + 1);
    t.tokens_[static_cast<std::size_t>(id)] = token;
    t.ids_.insert_or_assign(token, id);
  };
  for (const auto& [token, id] : model["vocab"].items()) add_token(token, id, "model.vocab");
  if (t.tokens_.empty()) throw InputError(file, "model.vocab is empty");

  std::vector<std::string> added;
  if (const auto it = root.find("added_tokens"); it != root.end() && it->is_array()) {
    for (const auto& entry : *it) {
      if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() || !entry.contains("id"))
        throw InputError(file, "added_tokens: each entry needs \"id\" and \"content\"");
      const auto content = entry["content"].get<std::string>();
      if (!t.ids_.contains(content)) add_token(content, entry["id"], "added_tokens");
      added.push_back(content);
    }
  }

  if (const auto it = model.find("continuing_subword_prefix"); it != model.end() && it->is_string())
    t.continuing_prefix_ = it->get<std::string>();
  if (const auto it = model.find("max_input_chars_per_word"); it != model.end() && it->is_number_integer())
    t.max_input_chars_per_word_ = it->get<std::int64_t>();

  // Normaliser: BertNormalizer (lowercase, strip_accents = null -> follow lowercase, clean_text,
  // handle_chinese_chars, all defaulting as in `tokenizers`) or none.
  bool json_lowercase = false;
  std::optional<bool> json_strip;
  bool json_clean = false, json_chinese = false;
  const auto norm = root.find("normalizer");
  if (norm != root.end() && !norm->is_null()) {
    const std::string norm_type = norm->is_object() ? json_type_name(*norm) : std::string();
    if (norm_type != "BertNormalizer")
      throw InputError(file, "normalizer type \"" + norm_type + "\" is not supported (expected BertNormalizer or null)");
    json_lowercase = optional_bool(*norm, "lowercase").value_or(true);
    json_strip = optional_bool(*norm, "strip_accents");
    json_clean = optional_bool(*norm, "clean_text").value_or(true);
    json_chinese = optional_bool(*norm, "handle_chinese_chars").value_or(true);
  }
  const auto pre = root.find("pre_tokenizer");
  const std::string pre_type = pre != root.end() && pre->is_object() ? json_type_name(*pre) : std::string();
  if (pre_type != "BertPreTokenizer")
    throw InputError(file, "pre_tokenizer type \"" + pre_type + "\" is not supported (expected BertPreTokenizer)");

  t.lowercase_ = settings.options.lowercase.value_or(settings.lowercase.value_or(json_lowercase));
  t.strip_accents_ = settings.strip_accents.value_or(json_strip.value_or(t.lowercase_));
  t.clean_text_ = json_clean;
  t.handle_chinese_chars_ = settings.handle_chinese_chars.value_or(json_chinese);

  // Special token names: the model's unk_token, the post-processor's [CLS]/[SEP], the padding's token.
  Settings names = settings;
  if (const auto it = model.find("unk_token"); !names.unk && it != model.end() && it->is_string())
    names.unk = it->get<std::string>();
  const auto post = root.find("post_processor");
  if (post != root.end() && post->is_object()) {
    const std::string post_type = json_type_name(*post);
    if (post_type == "BertProcessing") {
      if (!names.cls && post->contains("cls") && (*post)["cls"].is_array() && !(*post)["cls"].empty() && (*post)["cls"][0].is_string())
        names.cls = (*post)["cls"][0].get<std::string>();
      if (!names.sep && post->contains("sep") && (*post)["sep"].is_array() && !(*post)["sep"].empty() && (*post)["sep"][0].is_string())
        names.sep = (*post)["sep"][0].get<std::string>();
    } else if (post_type == "TemplateProcessing" && post->contains("single") && (*post)["single"].is_array()) {
      bool after_sequence = false;
      for (const auto& piece : (*post)["single"]) {
        if (!piece.is_object()) continue;
        if (piece.contains("Sequence")) after_sequence = true;
        if (piece.contains("SpecialToken") && piece["SpecialToken"].contains("id") && piece["SpecialToken"]["id"].is_string()) {
          const auto name = piece["SpecialToken"]["id"].get<std::string>();
          if (!after_sequence && !names.cls) names.cls = name;
          if (after_sequence && !names.sep) names.sep = name;
        }
      }
    }
  }
  if (const auto it = root.find("padding"); !names.pad && it != root.end() && it->is_object() &&
                                            it->contains("pad_token") && (*it)["pad_token"].is_string())
    names.pad = (*it)["pad_token"].get<std::string>();

  t.specials_ = std::move(added);
  t.finish(file, names);
  return t;
}

void WordPieceTokenizer::finish(const std::string& file, const Settings& settings) {
  if (settings.options.max_len < 2)
    throw ConfigError("WordPiece max_len must be at least 2 ([CLS] and [SEP]), got " +
                      std::to_string(settings.options.max_len));
  if (max_input_chars_per_word_ < 1)
    throw InputError(file, "max_input_chars_per_word must be positive, got " + std::to_string(max_input_chars_per_word_));
  max_len_ = settings.options.max_len;

  const auto require = [&](const std::optional<std::string>& name, const char* fallback) {
    const std::string token = name.value_or(fallback);
    const auto it = ids_.find(token);
    if (it == ids_.end())
      throw InputError(file, "the vocabulary has no \"" + token + "\" token (needed to encode texts for BERT)");
    specials_.push_back(token);
    return it->second;
  };
  unk_id_ = require(settings.unk, "[UNK]");
  cls_id_ = require(settings.cls, "[CLS]");
  sep_id_ = require(settings.sep, "[SEP]");
  pad_id_ = require(settings.pad, "[PAD]");
  if (ids_.contains(settings.mask.value_or("[MASK]"))) specials_.push_back(settings.mask.value_or("[MASK]"));

  // Literal special tokens: unique, longest first (leftmost-longest matching).
  std::erase_if(specials_, [](const std::string& s) { return s.empty(); });
  std::sort(specials_.begin(), specials_.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  specials_.erase(std::unique(specials_.begin(), specials_.end()), specials_.end());
  special_ids_.clear();
  for (const auto& s : specials_) {
    special_ids_.push_back(ids_.at(s));
    const auto b = static_cast<unsigned char>(s[0]);
    special_first_byte_[b >> 3] = static_cast<std::uint8_t>(special_first_byte_[b >> 3] | (1u << (b & 7)));
  }

  max_token_bytes_ = 0;
  max_continuation_bytes_ = 0;
  continuation_ids_.clear();
  for (const auto& [token, id] : ids_) {
    max_token_bytes_ = std::max(max_token_bytes_, token.size());
    if (!continuing_prefix_.empty() && token.size() > continuing_prefix_.size() && token.starts_with(continuing_prefix_)) {
      continuation_ids_.emplace(token.substr(continuing_prefix_.size()), id);
      max_continuation_bytes_ = std::max(max_continuation_bytes_, token.size() - continuing_prefix_.size());
    }
  }
  if (continuing_prefix_.empty()) {  // every token may continue a word
    continuation_ids_ = ids_;
    max_continuation_bytes_ = max_token_bytes_;
  }
}

// ---- tokenization -----------------------------------------------------------------------------------

std::int32_t WordPieceTokenizer::id_of(std::string_view token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? unk_id_ : it->second;
}

void WordPieceTokenizer::flush_word(Scratch& s) const {
  if (s.word.empty()) return;
  std::size_t piece_begin = s.pieces.size();
  const auto close_piece = [&] {
    if (s.pieces.size() > piece_begin) s.spans.emplace_back(piece_begin, s.pieces.size());
    piece_begin = s.pieces.size();
  };

  if (s.word_ascii) {
    for (auto cp : s.word) {
      if (lowercase_ && cp >= 'A' && cp <= 'Z') cp += 'a' - 'A';
      if (is_ascii_punctuation(cp)) {
        close_piece();
        s.pieces.push_back(static_cast<char>(cp));
        close_piece();
      } else {
        s.pieces.push_back(static_cast<char>(cp));
      }
    }
  } else {
    // transformers: NFC(text) -> lower() -> NFD + drop Mn when stripping accents. NFD after NFC equals NFD,
    // so the stripping path skips NFC; the other path lower-cases after NFC.
    s.cps.clear();
    if (strip_accents_) {
      if (lowercase_) {
        for (const auto cp : s.word) append_lower(cp, s.cps);
      } else {
        s.cps = s.word;
      }
      s.utf8.clear();
      for (const auto cp : s.cps) append_utf8(cp, s.utf8);
      normalize(s.utf8, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE), false, s.cps2);
      s.cps.clear();
      for (const auto cp : s.cps2)
        if (utf8proc_category(cp) != UTF8PROC_CATEGORY_MN) s.cps.push_back(cp);
    } else {
      s.utf8.clear();
      for (const auto cp : s.word) append_utf8(cp, s.utf8);
      normalize(s.utf8, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE), true, s.cps2);
      if (lowercase_) {
        for (const auto cp : s.cps2) append_lower(cp, s.cps);
      } else {
        s.cps.swap(s.cps2);
      }
    }
    for (const auto cp : s.cps) {
      if (is_punctuation(cp)) {
        close_piece();
        append_utf8(cp, s.pieces);
        close_piece();
      } else {
        append_utf8(cp, s.pieces);
      }
    }
  }
  close_piece();
  s.word.clear();
  s.word_ascii = true;
}

void WordPieceTokenizer::split_words(std::string_view text, std::size_t max_words, Scratch& s) const {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  auto left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    std::int32_t cp = 0;
    utf8proc_ssize_t n = 1;
    if (*p < 0x80) {
      cp = *p;
    } else {
      n = utf8proc_iterate(p, left, &cp);
      if (n <= 0) {
        cp = 0xFFFD;
        n = 1;
      }
    }
    p += n;
    left -= n;
    if (clean_text_) {
      if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
      if (is_clean_whitespace(cp)) cp = ' ';
    }
    if (handle_chinese_chars_ && cp >= 0x3400 && is_chinese_char(cp)) {
      flush_word(s);
      s.word.push_back(cp);
      s.word_ascii = false;
      flush_word(s);
      continue;
    }
    if (is_split_whitespace(cp)) {
      flush_word(s);
      if (s.spans.size() >= max_words) return;  // every basic token gives at least one id
      continue;
    }
    s.word.push_back(cp);
    if (cp >= 0x80) s.word_ascii = false;
  }
  flush_word(s);
}

void WordPieceTokenizer::append_word_pieces(std::string_view word, std::vector<std::int32_t>& ids) const {
  std::int64_t chars = 0;
  for (const char c : word) chars += is_continuation_byte(c) ? 0 : 1;
  if (chars > max_input_chars_per_word_) {
    ids.push_back(unk_id_);
    return;
  }
  const std::size_t mark = ids.size();
  std::size_t start = 0;
  while (start < word.size()) {
    const TokenMap& map = start == 0 ? ids_ : continuation_ids_;
    std::size_t end = std::min(word.size(), start + (start == 0 ? max_token_bytes_ : max_continuation_bytes_));
    while (end > start && end < word.size() && is_continuation_byte(word[end])) --end;
    bool found = false;
    while (end > start) {
      if (const auto it = map.find(word.substr(start, end - start)); it != map.end()) {
        ids.push_back(it->second);
        found = true;
        break;
      }
      --end;
      while (end > start && is_continuation_byte(word[end])) --end;
    }
    if (!found) {
      ids.resize(mark);
      ids.push_back(unk_id_);
      return;
    }
    start = end;
  }
}

void WordPieceTokenizer::append_plain_ids(std::string_view text, std::size_t limit, std::vector<std::int32_t>& ids,
                                          Scratch& s) const {
  if (ids.size() >= limit) return;
  s.pieces.clear();
  s.spans.clear();
  split_words(text, limit - ids.size(), s);
  for (const auto& [begin, end] : s.spans) {
    if (ids.size() >= limit) break;
    append_word_pieces(std::string_view(s.pieces).substr(begin, end - begin), ids);
  }
}

void WordPieceTokenizer::append_ids(std::string_view text, std::size_t limit, std::vector<std::int32_t>& ids) const {
  thread_local Scratch scratch;
  Scratch& s = scratch;
  std::size_t segment = 0;
  for (std::size_t i = 0; i < text.size() && ids.size() < limit;) {
    const auto b = static_cast<unsigned char>(text[i]);
    std::size_t matched = 0;
    if ((special_first_byte_[b >> 3] >> (b & 7)) & 1u) {
      for (std::size_t k = 0; k < specials_.size(); ++k) {
        if (text.compare(i, specials_[k].size(), specials_[k]) == 0) {
          append_plain_ids(text.substr(segment, i - segment), limit, ids, s);
          if (ids.size() < limit) ids.push_back(special_ids_[k]);
          matched = specials_[k].size();
          break;
        }
      }
    }
    if (matched > 0) {
      i += matched;
      segment = i;
    } else {
      ++i;
    }
  }
  if (segment < text.size()) append_plain_ids(text.substr(segment), limit, ids, s);
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::int32_t> ids;
  append_ids(text, SIZE_MAX, ids);
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (const auto id : ids) pieces.push_back(tokens_[static_cast<std::size_t>(id)]);
  return pieces;
}

std::vector<std::int32_t> WordPieceTokenizer::encode(std::string_view text) const {
  const auto limit = static_cast<std::size_t>(max_len_ - 1);  // [CLS] + max_len - 2 pieces
  std::vector<std::int32_t> ids;
  ids.reserve(std::min<std::size_t>(limit + 1, text.size() / 2 + 4));
  ids.push_back(cls_id_);
  append_ids(text, limit, ids);
  if (ids.size() > limit) ids.resize(limit);
  ids.push_back(sep_id_);
  return ids;
}

TokenizedCorpus WordPieceTokenizer::encode_corpus(const std::vector<std::string>& texts) const {
  TokenizedCorpus corpus;
  corpus.offsets.reserve(texts.size() + 1);
  const auto limit = static_cast<std::size_t>(max_len_ - 1);
  std::vector<std::int32_t> ids;
  for (const auto& text : texts) {
    ids.clear();
    ids.push_back(cls_id_);
    append_ids(text, limit, ids);
    if (ids.size() > limit) ids.resize(limit);
    ids.push_back(sep_id_);
    corpus.append(ids);
  }
  return corpus;
}

}  // namespace xmc
