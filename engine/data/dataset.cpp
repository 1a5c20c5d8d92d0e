#include "engine/data/dataset.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/atomic_file.h"
#include "engine/core/bounded_json.h"
#include "engine/core/content_hash.h"
#include "engine/core/utf8.h"
#include "engine/core/error.h"
#include "engine/data/text_lines.h"
#include "engine/data/xc_sparse_file.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace fs = std::filesystem;
using namespace dataset_files;

std::vector<double> Dataset::inverse_propensities() const {
  return xmc::inverse_propensities(label_frequencies(), num_train(), meta.propensity);
}

namespace {

/// `text` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD: a folder's name may hold any
/// bytes, but the dataset's name goes into JSON (runs' records, summaries), which holds UTF-8 only.
std::string with_replacement_characters(std::string_view text) {
  std::string out;
  for (auto at = find_invalid_utf8(text); at != std::string_view::npos; at = find_invalid_utf8(text)) {
    out.append(text.substr(0, at)).append("\xEF\xBF\xBD");
    text.remove_prefix(at + 1);
  }
  return out.append(text);
}

}  // namespace

DatasetMeta read_dataset_meta(const fs::path& dir) {
  DatasetMeta meta;
  meta.name = with_replacement_characters(dir.filename().string());
  const fs::path path = dir / kMeta;
  if (!fs::exists(path)) return meta;
  require_regular_file(path);
  std::ifstream in(path);
  nlohmann::json j;
  try {
    j = parse_bounded_json(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path.string(), "is not valid JSON: " + std::string(e.what()));
  }
  try {
    meta.name = j.value("name", meta.name);
    meta.source = j.value("source", std::string{});
    if (j.contains("propensity")) {
      meta.propensity.a = j["propensity"].value("A", meta.propensity.a);
      meta.propensity.b = j["propensity"].value("B", meta.propensity.b);
    }
    meta.feature_names = j.value("feature_names", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string(), "has a field of the wrong type: " + std::string(e.what()));
  }
  try {
    check_propensity_params(meta.propensity, "field \"propensity\"");
  } catch (const ConfigError& e) {
    throw InputError(path.string(), e.what());
  }
  return meta;
}

void write_dataset_meta(const fs::path& dir, const DatasetMeta& meta) {
  nlohmann::json j;
  j["name"] = meta.name;
  j["source"] = meta.source;
  j["propensity"] = {{"A", meta.propensity.a}, {"B", meta.propensity.b}};
  if (!meta.feature_names.empty()) j["feature_names"] = meta.feature_names;
  AtomicFileWriter out(dir / kMeta);
  out.stream() << j.dump(2) << '\n';
  out.commit();
}

namespace {

void require_cols(const CsrMatrix& m, std::int64_t cols, const fs::path& file, const std::string& what) {
  if (m.cols != cols)
    throw InputError(file.string(), "header declares " + std::to_string(m.cols) + " columns but " + what + " has " +
                                        std::to_string(cols));
}

void require_rows(const CsrMatrix& m, std::int64_t rows, const fs::path& file, const std::string& what) {
  if (m.rows != rows)
    throw InputError(file.string(), "has " + std::to_string(m.rows) + " rows but " + what + " has " +
                                        std::to_string(rows));
}

/// A split's bank, checked against the split's row count and the other banks' m; null when it has none.
std::shared_ptr<const ImageBank> load_split_images(const fs::path& dir, const std::string& split, std::int64_t rows, const std::string& rows_from,
                                                   std::int64_t& dim) {
  const fs::path bank_path = image_files::bank(dir, split);
  std::error_code error;
  if (!fs::exists(bank_path, error)) {
    if (fs::exists(image_files::counts(dir, split), error))
      throw InputError(image_files::counts(dir, split).string(), "counts images, but there is no " + bank_path.filename().string() + " beside it");
    return nullptr;
  }
  auto bank = std::make_shared<const ImageBank>(ImageBank::open(bank_path, image_files::counts(dir, split)));
  if (bank->rows() != rows)
    throw InputError(bank_path.string(), "has " + std::to_string(bank->rows()) + " rows, but " + rows_from + " has " + std::to_string(rows));
  if (dim != 0 && bank->dim() != dim)
    throw InputError(bank_path.string(), "holds embeddings of " + std::to_string(bank->dim()) + " numbers, but the dataset's other banks hold " +
                                             std::to_string(dim) + ": all come from one vision model");
  dim = bank->dim();
  return bank;
}

}  // namespace

void load_given_features(Dataset& d, Progress& progress) {
  const fs::path& dir = d.dir;
  if (!fs::exists(dir / kTrainFeatures)) throw InputError((dir / kTrainFeatures).string(), "no such file: the dataset has no given features");
  d.train_features = read_xc_sparse(dir / kTrainFeatures, progress);
  require_rows(*d.train_features, d.num_train(), dir / kTrainFeatures, std::string(kTrainLabels));
  if (!fs::exists(dir / kTestFeatures))
    throw InputError((dir / kTestFeatures).string(), "no such file (the dataset has train features, so it needs test features too)");
  d.test_features = read_xc_sparse(dir / kTestFeatures, progress);
  require_rows(*d.test_features, d.num_test(), dir / kTestFeatures, std::string(kTestLabels));
  require_cols(*d.test_features, d.train_features->cols, dir / kTestFeatures, std::string(kTrainFeatures));
  if (!d.meta.feature_names.empty() && static_cast<std::int64_t>(d.meta.feature_names.size()) != d.train_features->cols)
    throw InputError((dir / kMeta).string(), "names " + std::to_string(d.meta.feature_names.size()) + " features, but " + kTrainFeatures + " has " +
                                                 std::to_string(d.train_features->cols) + " columns");
}

Dataset load_dataset(const fs::path& dir, DatasetLoadOptions options, Progress& progress) {
  if (!fs::is_directory(dir)) throw InputError(dir.string(), "is not a dataset folder (no such directory)");
  Dataset d;
  d.dir = dir;
  d.meta = read_dataset_meta(dir);
  d.label_text = read_text_lines(dir / kLabelText);
  const auto num_labels = static_cast<std::int64_t>(d.label_text.size());

  d.train_labels = read_xc_sparse(dir / kTrainLabels, progress);
  require_cols(d.train_labels, num_labels, dir / kTrainLabels, std::string(kLabelText));
  d.test_labels = read_xc_sparse(dir / kTestLabels, progress);
  require_cols(d.test_labels, num_labels, dir / kTestLabels, std::string(kLabelText));

  d.train_text = read_text_lines(dir / kTrainText, d.train_labels.rows);
  d.test_text = read_text_lines(dir / kTestText, d.test_labels.rows);

  if (fs::exists(dir / kTestFilter)) d.test_filter = read_filter_pairs(dir / kTestFilter, d.num_test(), num_labels);

  if (options.load_features && fs::exists(dir / kTrainFeatures)) load_given_features(d, progress);
  if (options.load_images && fs::is_directory(dir / image_files::kFolder)) {
    std::int64_t dim = 0;
    d.train_images = load_split_images(dir, "trn", d.num_train(), kTrainLabels, dim);
    d.test_images = load_split_images(dir, "tst", d.num_test(), kTestLabels, dim);
    d.label_images = load_split_images(dir, "lbl", num_labels, kLabelText, dim);
  }
  return d;
}

namespace {

/// dataset.json is JSON, which holds UTF-8 text only: a name from a non-UTF-8 file is refused before
/// anything is written (it used to fail after the other files, leaving a folder without dataset.json).
void check_meta_text(const DatasetMeta& meta, const fs::path& dir) {
  auto check = [&](const std::string& what, const std::string& text) {
    const auto at = find_invalid_utf8(text);
    if (at == std::string::npos) return;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[at]));
    throw InputError(dir.string(), "the dataset's " + what + " is not valid UTF-8 (byte " + byte + " at offset " + std::to_string(at) +
                                       "); give a name with --name or fix the source file's encoding");
  };
  check("name", meta.name);
  check("source", meta.source);
  for (const auto& name : meta.feature_names) check("feature name \"" + to_single_line(name.substr(0, 40)) + "\"", name);
}

}  // namespace

void save_dataset(const Dataset& d, const fs::path& dir) {
  check_meta_text(d.meta, dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(dir.string(), "cannot create the output folder: " + ec.message());
  write_text_lines(dir / kTrainText, d.train_text);
  write_text_lines(dir / kTestText, d.test_text);
  write_text_lines(dir / kLabelText, d.label_text);
  write_xc_sparse(dir / kTrainLabels, d.train_labels);
  write_xc_sparse(dir / kTestLabels, d.test_labels);
  if (!d.test_filter.empty()) write_filter_pairs(dir / kTestFilter, d.test_filter);
  if (d.train_features) write_xc_sparse(dir / kTrainFeatures, *d.train_features);
  if (d.test_features) write_xc_sparse(dir / kTestFeatures, *d.test_features);
  if (d.has_images()) {
    fs::create_directories(dir / image_files::kFolder, ec);
    if (ec) throw InputError((dir / image_files::kFolder).string(), "cannot create the image folder: " + ec.message());
    const std::pair<const char*, const ImageBank*> banks[] = {
        {"trn", d.train_images.get()}, {"tst", d.test_images.get()}, {"lbl", d.label_images.get()}};
    for (const auto& [split, bank] : banks)
      if (bank != nullptr) bank->save(image_files::bank(dir, split), image_files::counts(dir, split));
  }
  // Written last: its presence marks a complete dataset.
  write_dataset_meta(dir, d.meta);
}

std::string dataset_fingerprint(const fs::path& dir) {
  ContentHash hash;
  for (const char* name : {kTrainText, kTestText, kLabelText, kTrainLabels, kTestLabels, kTestFilter, kTrainFeatures,
                           kTestFeatures})
    if (fs::exists(dir / name)) hash.add_file(dir / name);
  // Image banks count when present (a folder without them keeps the fingerprint it always had).
  for (const char* split : image_files::kSplits)
    for (const fs::path& file : {image_files::bank(dir, split), image_files::counts(dir, split)})
      if (fs::exists(file)) hash.add_file(file);
  return hash.hex();
}

}  // namespace xmc
