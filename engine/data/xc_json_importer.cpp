#include "engine/data/xc_json_importer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/gzip_line_reader.h"
#include "engine/core/utf8.h"

namespace xmc {
namespace {

struct JsonRecord {
  std::string text;
  std::vector<std::int32_t> targets;
};

std::string record_text(const nlohmann::json& j, bool title_only, const GzipLineReader& reader) {
  if (!j.contains("title") || !j["title"].is_string())
    throw InputError(reader.path(), reader.line_number(), "record has no string field 'title'");
  std::string text = j["title"].get<std::string>();
  if (!title_only && j.contains("content") && j["content"].is_string()) {
    const auto& content = j["content"].get_ref<const std::string&>();
    if (!content.empty()) text += (text.empty() ? "" : " ") + content;
  }
  return to_single_line(text);
}

std::vector<JsonRecord> read_records(const std::filesystem::path& path, bool title_only, bool with_targets,
                                     Progress& progress) {
  GzipLineReader reader(path);
  std::vector<JsonRecord> records;
  std::string line;
  progress.start("reading " + path.filename().string(), static_cast<std::int64_t>(reader.file_size()));
  while (reader.next(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = parse_bounded_json(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError(reader.path(), reader.line_number(), "not a JSON object: " + std::string(e.what()));
    }
    if (!j.is_object()) throw InputError(reader.path(), reader.line_number(), "expected one JSON object per line");
    JsonRecord record;
    record.text = record_text(j, title_only, reader);
    if (with_targets) {
      if (!j.contains("target_ind") || !j["target_ind"].is_array())
        throw InputError(reader.path(), reader.line_number(), "record has no array field 'target_ind'");
      for (const auto& t : j["target_ind"]) {
        if (!t.is_number_integer() || t.get<std::int64_t>() < 0)
          throw InputError(reader.path(), reader.line_number(), "'target_ind' holds " + t.dump() + ", not a label index");
        const auto value = t.get<std::int64_t>();
        if (value > INT32_MAX) throw InputError(reader.path(), reader.line_number(), "label index " + std::to_string(value) + " is too large");
        record.targets.push_back(static_cast<std::int32_t>(value));
      }
    }
    records.push_back(std::move(record));
    if ((records.size() & 4095) == 0) progress.update(static_cast<std::int64_t>(reader.compressed_offset()));
  }
  progress.update(static_cast<std::int64_t>(reader.compressed_offset()));
  progress.finish();
  return records;
}

void fill_split(const std::vector<JsonRecord>& records, std::int64_t num_labels, const std::filesystem::path& path,
                std::vector<std::string>& texts, CsrMatrix& labels) {
  std::vector<std::vector<std::int32_t>> rows;
  rows.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    for (auto t : records[i].targets)
      if (t >= num_labels)
        throw InputError(path.string(), "record " + std::to_string(i + 1) + " has label index " + std::to_string(t) +
                                            " but the label file has only " + std::to_string(num_labels) + " labels");
    texts.push_back(records[i].text);
    rows.push_back(records[i].targets);
  }
  labels = csr_from_rows(rows, num_labels);
}

}  // namespace

Dataset import_xc_json(const XcJsonImportOptions& options, Progress& progress) {
  auto label_records = read_records(options.labels, options.title_only, false, progress);
  auto train_records = read_records(options.train, options.title_only, true, progress);
  if (train_records.empty()) throw InputError(options.train.string(), "holds no records: there is nothing to train on");
  auto test_records = read_records(options.test, options.title_only, true, progress);
  Dataset d;
  const auto folder = std::filesystem::absolute(options.train).parent_path().filename().string();
  d.meta.name = options.name.empty() ? folder : options.name;
  d.meta.source = "XC repository JSON import (" + std::string(options.title_only ? "titles" : "title + content") + ")";
  const auto num_labels = static_cast<std::int64_t>(label_records.size());
  for (auto& r : label_records) d.label_text.push_back(std::move(r.text));
  fill_split(train_records, num_labels, options.train, d.train_text, d.train_labels);
  fill_split(test_records, num_labels, options.test, d.test_text, d.test_labels);
  return d;
}

}  // namespace xmc
