#include "engine/data/mulan_importer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/core/trim.h"
#include "engine/core/utf8.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

std::string decode_xml_entities(std::string_view s) {
  static const std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    bool replaced = false;
    if (s[i] == '&')
      for (auto [entity, c] : kEntities)
        if (s.substr(i, entity.size()) == entity) {
          out += c;
          i += entity.size();
          replaced = true;
          break;
        }
    if (!replaced) out += s[i++];
  }
  return out;
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

/// Splits off one ARFF name (quoted with ' or ", or bare up to white space) from the front of `s`.
std::string take_arff_name(std::string_view& s, const std::string& file, std::size_t line) {
  s = trim(s);
  if (s.empty()) throw InputError(file, line, "@attribute has no name");
  std::string name;
  if (s.front() == '\'' || s.front() == '"') {
    const char quote = s.front();
    std::size_t i = 1;
    for (; i < s.size() && s[i] != quote; ++i) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      name += s[i];
    }
    if (i == s.size()) throw InputError(file, line, "unterminated quoted attribute name");
    s.remove_prefix(i + 1);
  } else {
    std::size_t i = 0;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    name = std::string(s.substr(0, i));
    s.remove_prefix(i);
  }
  return name;
}

struct ArffRow {
  std::vector<std::pair<std::int32_t, float>> entries;  // (attribute, value), value != 0
  std::size_t line = 0;                                 // in its file, for errors found later
};

/// A parsed ARFF file: attribute names and rows of non-zero (attribute, value) entries.
struct ArffFile {
  std::string relation;
  std::vector<std::string> attributes;
  std::vector<ArffRow> rows;
};

float parse_value(std::string_view token, const std::string& file, std::size_t line) {
  token = trim(token);
  if (token.size() >= 2 && (token.front() == '\'' || token.front() == '"')) token = token.substr(1, token.size() - 2);
  float value = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || ptr != token.data() + token.size() || !std::isfinite(value))
    throw InputError(file, line, "value '" + std::string(token) + "' is not a finite number (only numeric attributes are supported)");
  return value;
}

ArffFile read_arff(const std::filesystem::path& path, Progress& progress) {
  LineReader reader(path);
  const std::string file = path.string();
  ArffFile arff;
  std::string_view line;
  bool in_data = false;
  std::unordered_set<std::string> declared;
  progress.start("reading " + path.filename().string(), static_cast<std::int64_t>(reader.file_size()));
  while (reader.next(line)) {
    const std::size_t ln = reader.line_number();
    if (find_invalid_utf8(line) != std::string_view::npos) throw InputError(file, ln, "line is not valid UTF-8");
    std::string_view s = trim(line);
    if (s.empty() || s.front() == '%') continue;
    if (!in_data) {
      if (iequals_prefix(s, "@relation")) {
        std::string_view rest = s.substr(9);
        arff.relation = take_arff_name(rest, file, ln);
      } else if (iequals_prefix(s, "@attribute")) {
        std::string_view rest = s.substr(10);
        arff.attributes.push_back(take_arff_name(rest, file, ln));
        if (!declared.insert(arff.attributes.back()).second)
          throw InputError(file, ln, "@attribute '" + arff.attributes.back() + "' is declared twice");
        if (trim(rest).empty()) throw InputError(file, ln, "@attribute '" + arff.attributes.back() + "' has no type");
      } else if (iequals_prefix(s, "@data")) {
        in_data = true;
      } else {
        throw InputError(file, ln, "expected @relation, @attribute or @data, got '" + std::string(s.substr(0, 40)) + "'");
      }
      continue;
    }
    ArffRow row;
    row.line = ln;
    const auto num_attributes = static_cast<std::int64_t>(arff.attributes.size());
    if (s.front() == '{') {
      if (s.back() != '}') throw InputError(file, ln, "sparse row starts with '{' but does not end with '}'");
      std::string_view body = s.substr(1, s.size() - 2);
      std::int64_t previous = -1;
      while (!trim(body).empty()) {
        const auto comma = body.find(',');
        std::string_view entry = trim(body.substr(0, comma));
        body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
        const auto space = entry.find_first_of(" \t");
        std::int64_t index = -1;
        auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + (space == std::string_view::npos ? entry.size() : space), index);
        if (ec != std::errc() || space == std::string_view::npos || ptr != entry.data() + space)  // "2abc", "0x2"
          throw InputError(file, ln, "expected 'INDEX VALUE' in a sparse row, got '" + std::string(entry) + "'");
        if (index < 0 || index >= num_attributes)
          throw InputError(file, ln, "attribute index " + std::to_string(index) + " is out of range (the header declares " +
                                         std::to_string(num_attributes) + " attributes)");
        if (index <= previous) throw InputError(file, ln, "attribute indices in a sparse row must increase (" + std::to_string(index) + " after " + std::to_string(previous) + ")");
        previous = index;
        const float value = parse_value(entry.substr(space + 1), file, ln);
        if (value != 0) row.entries.emplace_back(static_cast<std::int32_t>(index), value);
      }
    } else {
      std::int32_t index = 0;
      std::string_view body = s;
      while (true) {
        const auto comma = body.find(',');
        if (index >= num_attributes) throw InputError(file, ln, "dense row has more values than the " + std::to_string(num_attributes) + " attributes");
        const float value = parse_value(body.substr(0, comma), file, ln);
        if (value != 0) row.entries.emplace_back(index, value);
        ++index;
        if (comma == std::string_view::npos) break;
        body = body.substr(comma + 1);
      }
      if (index != num_attributes)
        throw InputError(file, ln, "dense row has " + std::to_string(index) + " values but the header declares " + std::to_string(num_attributes) + " attributes");
    }
    arff.rows.push_back(std::move(row));
    if ((arff.rows.size() & 1023) == 0) progress.update(static_cast<std::int64_t>(reader.bytes_read()));
  }
  progress.update(static_cast<std::int64_t>(reader.bytes_read()));
  progress.finish();
  if (!in_data) throw InputError(file, "no @data section");
  if (arff.rows.empty()) throw InputError(file, "no data rows after @data");
  return arff;
}

std::string label_text(std::string name, const std::string& prefix) {
  if (!prefix.empty() && name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) name.erase(0, prefix.size());
  for (char& c : name)
    if (c == '_') c = ' ';
  return name;
}

}  // namespace

std::vector<std::string> read_mulan_label_names(const std::filesystem::path& xml) {
  require_regular_file(xml);
  std::ifstream in(xml);
  if (!in) throw InputError(xml.string(), "cannot open file for reading");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<std::string> names;
  for (std::size_t pos = text.find("<label"); pos != std::string::npos; pos = text.find("<label", pos + 6)) {
    const char next = pos + 6 < text.size() ? text[pos + 6] : '\0';
    if (next != ' ' && next != '\t' && next != '\n' && next != '\r') continue;  // e.g. <labels>
    const auto close = text.find('>', pos);
    const auto attr = text.find("name=", pos);
    const auto line = [&] { return static_cast<std::size_t>(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n')); };
    if (attr == std::string::npos || attr > close) throw InputError(xml.string(), line(), "<label> element without a name attribute");
    const char quote = attr + 5 < text.size() ? text[attr + 5] : '\0';
    if (quote != '"' && quote != '\'') throw InputError(xml.string(), line(), "<label> name attribute without a quoted value");
    const auto end = text.find(quote, attr + 6);
    if (end == std::string::npos) throw InputError(xml.string(), line(), "<label> name attribute whose quote is never closed");
    names.push_back(decode_xml_entities(std::string_view(text).substr(attr + 6, end - attr - 6)));
  }
  if (names.empty()) throw InputError(xml.string(), "no <label name=\"...\"> elements found");
  return names;
}

Dataset import_mulan(const MulanImportOptions& options, Progress& progress) {
  const auto label_names = read_mulan_label_names(options.labels_xml);
  ArffFile train = read_arff(options.train_arff, progress);
  ArffFile test = read_arff(options.test_arff, progress);
  if (train.attributes != test.attributes)
    throw InputError(options.test_arff.string(), "its @attribute list differs from the one in " + options.train_arff.string());

  // Attribute -> label index (names from the XML) or feature index (all remaining attributes).
  std::unordered_map<std::string, std::int32_t> label_of_name;
  for (std::size_t l = 0; l < label_names.size(); ++l) label_of_name.emplace(label_names[l], static_cast<std::int32_t>(l));
  std::vector<std::int32_t> label_of(train.attributes.size(), -1), feature_of(train.attributes.size(), -1);
  std::vector<bool> label_found(label_names.size(), false);
  std::vector<std::string> words;
  for (std::size_t a = 0; a < train.attributes.size(); ++a) {
    auto it = label_of_name.find(train.attributes[a]);
    if (it != label_of_name.end()) {
      label_of[a] = it->second;
      label_found[static_cast<std::size_t>(it->second)] = true;
    } else {
      feature_of[a] = static_cast<std::int32_t>(words.size());
      words.push_back(train.attributes[a]);
    }
  }
  for (std::size_t l = 0; l < label_names.size(); ++l)
    if (!label_found[l])
      throw InputError(options.labels_xml.string(), "label '" + label_names[l] + "' is not an @attribute of " + options.train_arff.string());

  Dataset d;
  d.meta.name = options.name.empty() ? train.relation : options.name;
  for (std::string_view suffix : {"_train", "-train"})  // mulan relations are often named "<set>_train"
    if (options.name.empty() && d.meta.name.size() > suffix.size() && d.meta.name.ends_with(suffix))
      d.meta.name.resize(d.meta.name.size() - suffix.size());
  d.meta.source = "mulan import of " + options.train_arff.filename().string() + " and " + options.test_arff.filename().string();
  d.meta.feature_names = words;
  for (const auto& name : label_names) d.label_text.push_back(label_text(name, options.label_prefix));

  auto convert = [&](const ArffFile& arff, const std::filesystem::path& path, std::vector<std::string>& texts, CsrMatrix& labels,
                     CsrMatrix& features) {
    labels.cols = static_cast<std::int64_t>(label_names.size());
    features.cols = static_cast<std::int64_t>(words.size());
    std::vector<std::int32_t> label_idx, feature_idx;
    std::vector<float> label_val, feature_val;
    for (const auto& row : arff.rows) {
      label_idx.clear(), label_val.clear(), feature_idx.clear(), feature_val.clear();
      std::string text;
      for (auto [attribute, value] : row.entries) {
        const auto a = static_cast<std::size_t>(attribute);
        if (label_of[a] >= 0) {
          if (value != 1.0f) {  // -1 must not count as a positive
            std::ostringstream shown;
            shown << value;
            throw InputError(path.string(), row.line, "label attribute '" + train.attributes[a] + "' has value " + shown.str() + "; labels are 0 or 1");
          }
          label_idx.push_back(label_of[a]);
          label_val.push_back(1.0f);
        } else {
          feature_idx.push_back(feature_of[a]);
          feature_val.push_back(value);
          if (!text.empty()) text += ' ';
          text += words[static_cast<std::size_t>(feature_of[a])];
        }
      }
      // Label order follows the XML, not the ARFF; feature order follows the ARFF (already sorted).
      std::vector<std::size_t> order(label_idx.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](auto x, auto y) { return label_idx[x] < label_idx[y]; });
      std::vector<std::int32_t> sorted_labels;
      for (auto i : order) sorted_labels.push_back(label_idx[i]);
      labels.append_row(sorted_labels, label_val);
      features.append_row(feature_idx, feature_val);
      texts.push_back(std::move(text));
    }
  };
  d.train_features.emplace();
  d.test_features.emplace();
  convert(train, options.train_arff, d.train_text, d.train_labels, *d.train_features);
  convert(test, options.test_arff, d.test_text, d.test_labels, *d.test_features);
  return d;
}

}  // namespace xmc
