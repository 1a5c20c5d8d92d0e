#include "engine/data/debian_packages.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/core/portable_random.h"
#include "engine/core/trim.h"
#include "engine/core/utf8.h"

namespace xmc {
namespace {

/// White space around a field, its value and a tag (a carriage return too: lines may end \r\r\n).
constexpr std::string_view kBlanks = " \t\r";

/// One stanza being read: its fields of interest, and where it began.
struct Stanza {
  DebianPackage package;
  bool has_fields = false;
  bool has_package = false;
  std::size_t first_line = 0;
  std::string field;  ///< the field the last line belongs to (continuation lines extend it)
};

void add_tags(DebianPackage& package, std::string_view text) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view tag = trim(text.substr(0, comma), kBlanks);
    if (!tag.empty() && std::find(package.tags.begin(), package.tags.end(), tag) == package.tags.end()) package.tags.emplace_back(tag);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::vector<DebianPackage> read_debian_packages(const std::filesystem::path& file) {
  LineReader reader(file);
  const std::string name = file.string();
  std::vector<DebianPackage> out;
  std::unordered_set<std::string> seen;
  Stanza stanza;
  auto finish = [&] {
    if (stanza.has_fields && !stanza.has_package)
      throw InputError(name, stanza.first_line, "a package stanza without a Package field");
    if (stanza.has_package && seen.insert(stanza.package.name).second) out.push_back(std::move(stanza.package));
    stanza = Stanza{};
  };
  std::string_view line;
  while (reader.next(line)) {
    const std::size_t at = reader.line_number();
    if (!is_valid_utf8(line)) throw InputError(name, at, "not valid UTF-8");
    if (trim(line, kBlanks).empty()) {
      finish();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (stanza.field.empty()) throw InputError(name, at, "a continuation line (it starts with white space) with no field before it");
      if (stanza.field == "tag") add_tags(stanza.package, line);
      continue;  // a long description's lines, or another field's
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) throw InputError(name, at, "expected \"Field: value\", got \"" + std::string(line.substr(0, 80)) + "\"");
    const std::string_view field = trim(line.substr(0, colon), kBlanks);
    if (field.empty()) throw InputError(name, at, "a field with no name before its colon");
    const std::string_view value = trim(line.substr(colon + 1), kBlanks);
    if (!stanza.has_fields) stanza.first_line = at;
    stanza.has_fields = true;
    stanza.field.assign(field);
    std::transform(stanza.field.begin(), stanza.field.end(), stanza.field.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (stanza.field == "package") {
      if (value.empty() || value.find_first_of(" \t") != std::string_view::npos)
        throw InputError(name, at, "a Package name must be one word, got \"" + std::string(value.substr(0, 80)) + "\"");
      stanza.package.name.assign(value);
      stanza.has_package = true;
    } else if (stanza.field == "description") {
      stanza.package.description.assign(value);
    } else if (stanza.field == "section") {
      stanza.package.section.assign(value);
    } else if (stanza.field == "tag") {
      add_tags(stanza.package, value);
    }
  }
  finish();
  return out;
}

Dataset build_debian_dataset(const DebianBuildOptions& options, Progress& progress) {
  if (options.labels != "tags" && options.labels != "section")
    throw ConfigError("--labels must be tags or section, got \"" + options.labels + "\"");
  if (!(options.test_fraction > 0 && options.test_fraction < 1))
    throw ConfigError("--test-fraction must be between 0 and 1 (exclusive), got " + std::to_string(options.test_fraction));
  if (options.min_label_count < 1) throw ConfigError("--min-label-count must be at least 1, got " + std::to_string(options.min_label_count));
  if (options.max_items < 0) throw ConfigError("--max-items must be 0 (all) or more, got " + std::to_string(options.max_items));
  progress.start("reading " + options.packages.string(), 0);
  std::vector<DebianPackage> packages = read_debian_packages(options.packages);
  progress.finish();
  const bool by_tags = options.labels == "tags";
  std::erase_if(packages, [&](const DebianPackage& p) { return by_tags ? p.tags.empty() : p.section.empty(); });
  // A seeded order, the same on every platform; the first max_items, the first test_fraction of them for testing.
  std::vector<std::int64_t> order(packages.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::mt19937_64 rng(options.seed);
  shuffle_rows(order, rng);
  if (options.max_items > 0 && static_cast<std::int64_t>(order.size()) > options.max_items) order.resize(static_cast<std::size_t>(options.max_items));
  const auto test_count = static_cast<std::size_t>(std::llround(options.test_fraction * static_cast<double>(order.size())));
  auto labels_of = [&](const DebianPackage& p) { return by_tags ? p.tags : std::vector<std::string>{p.section}; };
  // Labels carried by enough training packages, ids in byte order.
  std::map<std::string, std::int64_t> train_counts;
  for (std::size_t i = test_count; i < order.size(); ++i)
    for (const std::string& label : labels_of(packages[static_cast<std::size_t>(order[i])])) ++train_counts[label];
  std::map<std::string, std::int32_t> ids;
  Dataset d;
  for (const auto& [label, count] : train_counts)
    if (count >= options.min_label_count) {
      ids.emplace(label, static_cast<std::int32_t>(d.label_text.size()));
      d.label_text.push_back(label);
    }
  if (ids.empty())
    throw ConfigError(options.packages.string() + ": no label is on " + std::to_string(options.min_label_count) + " or more training packages (" +
                      std::to_string(packages.size()) + " packages with " + options.labels + "); lower --min-label-count");
  std::vector<std::vector<std::int32_t>> train, test;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const DebianPackage& p = packages[static_cast<std::size_t>(order[i])];
    std::vector<std::int32_t> row;
    for (const std::string& label : labels_of(p))
      if (const auto it = ids.find(label); it != ids.end()) row.push_back(it->second);
    if (row.empty()) continue;  // its labels are all too rare
    const std::string text = p.description.empty() ? p.name : p.name + ": " + p.description;
    if (i < test_count) {
      d.test_text.push_back(text);
      test.push_back(std::move(row));
    } else {
      d.train_text.push_back(text);
      train.push_back(std::move(row));
    }
  }
  if (train.empty() || test.empty())
    throw ConfigError(options.packages.string() + ": " + std::to_string(train.size()) + " training and " + std::to_string(test.size()) +
                      " test packages are left with a label; use a larger package index or another --test-fraction");
  const auto num_labels = static_cast<std::int64_t>(d.label_text.size());
  d.train_labels = csr_from_rows(train, num_labels);
  d.test_labels = csr_from_rows(test, num_labels);
  d.meta.name = "debian-" + options.labels;
  d.meta.source = "Debian package index " + options.packages.filename().string() + " (" + options.labels + ", seed " + std::to_string(options.seed) + ")";
  return d;
}

}  // namespace xmc
