#include "engine/data/dataset_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace xmc {
namespace {

std::int64_t count_words(const std::string& text) {
  std::int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\t';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

TextLengthStats text_stats(const std::vector<std::string>& texts) {
  TextLengthStats s;
  if (texts.empty()) return s;
  std::vector<std::int64_t> lengths;
  lengths.reserve(texts.size());
  double total = 0;
  for (const auto& t : texts) {
    const auto n = count_words(t);
    lengths.push_back(n);
    total += static_cast<double>(n);
    if (n == 0) ++s.empty;
  }
  s.mean_words = total / static_cast<double>(texts.size());
  auto mid = lengths.begin() + static_cast<std::ptrdiff_t>(lengths.size() / 2);
  std::nth_element(lengths.begin(), mid, lengths.end());
  s.median_words = *mid;
  s.max_words = *std::max_element(lengths.begin(), lengths.end());
  return s;
}

std::int64_t rows_without_entries(const CsrMatrix& m) {
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < m.rows; ++r) n += m.row_size(r) == 0;
  return n;
}

nlohmann::json text_json(const TextLengthStats& s) {
  return {{"mean_words", s.mean_words}, {"median_words", s.median_words}, {"max_words", s.max_words}, {"empty", s.empty}};
}

}  // namespace

DatasetSummary summarize_dataset(const Dataset& d) {
  DatasetSummary s;
  s.name = d.meta.name;
  s.num_train = d.num_train();
  s.num_test = d.num_test();
  s.num_labels = d.num_labels();
  s.num_features = d.train_features ? d.train_features->cols : 0;
  const auto freq = d.label_frequencies();
  s.avg_labels_per_point = s.num_train ? static_cast<double>(d.train_labels.nnz()) / static_cast<double>(s.num_train) : 0;
  s.avg_points_per_label = s.num_labels ? static_cast<double>(d.train_labels.nnz()) / static_cast<double>(s.num_labels) : 0;
  for (auto f : freq) {
    s.labels_with_5_or_more += f >= 5;
    s.labels_unseen_in_train += f == 0;
  }
  for (std::size_t l = 0; l < freq.size(); ++l)
    if (s.num_train > 0 && 2 * freq[l] > s.num_train)
      s.dominant_labels.push_back({static_cast<std::int64_t>(l), l < d.label_text.size() ? d.label_text[l] : std::string(),
                                   static_cast<double>(freq[l]) / static_cast<double>(s.num_train)});
  std::sort(s.dominant_labels.begin(), s.dominant_labels.end(),
            [](const auto& a, const auto& b) { return a.train_fraction != b.train_fraction ? a.train_fraction > b.train_fraction : a.label < b.label; });
  if (s.dominant_labels.size() > 5) s.dominant_labels.resize(5);
  s.train_rows_without_labels = rows_without_entries(d.train_labels);
  s.test_rows_without_labels = rows_without_entries(d.test_labels);
  s.filtered_test_pairs = static_cast<std::int64_t>(d.test_filter.size());
  auto sorted = freq;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0}) {
    if (sorted.empty()) break;
    // Nearest-rank quantile.
    const auto idx = static_cast<std::size_t>(std::llround(q * static_cast<double>(sorted.size() - 1)));
    s.label_frequency_quantiles.emplace_back(q, sorted[idx]);
  }
  s.train_text = text_stats(d.train_text);
  s.test_text = text_stats(d.test_text);
  s.label_text = text_stats(d.label_text);
  const std::pair<const char*, const ImageBank*> banks[] = {{"train", d.train_images.get()}, {"test", d.test_images.get()}, {"labels", d.label_images.get()}};
  for (const auto& [split, bank] : banks)
    if (bank != nullptr) s.images.emplace_back(split, image_coverage(*bank));
  return s;
}

std::string to_json(const DatasetSummary& s) {
  nlohmann::json quantiles = nlohmann::json::object();
  for (auto [q, v] : s.label_frequency_quantiles) {
    char key[16];
    std::snprintf(key, sizeof key, "q%g", q * 100);
    quantiles[key] = v;
  }
  nlohmann::json dominant = nlohmann::json::array();
  for (const auto& label : s.dominant_labels)
    dominant.push_back({{"label", label.label}, {"text", label.text}, {"train_fraction", label.train_fraction}});
  nlohmann::json j = {{"name", s.name},
                      {"N", s.num_train},
                      {"N_test", s.num_test},
                      {"L", s.num_labels},
                      {"F", s.num_features},
                      {"avg_labels_per_point", s.avg_labels_per_point},
                      {"avg_points_per_label", s.avg_points_per_label},
                      {"labels_with_5_or_more_points", s.labels_with_5_or_more},
                      {"labels_unseen_in_train", s.labels_unseen_in_train},
                      {"train_rows_without_labels", s.train_rows_without_labels},
                      {"test_rows_without_labels", s.test_rows_without_labels},
                      {"filtered_test_pairs", s.filtered_test_pairs},
                      {"label_frequency_quantiles", quantiles},
                      {"labels_in_most_train_rows", dominant},
                      {"text_words", {{"train", text_json(s.train_text)}, {"test", text_json(s.test_text)}, {"labels", text_json(s.label_text)}}}};
  if (!s.images.empty()) {
    nlohmann::json images = nlohmann::json::object();
    for (const auto& [split, c] : s.images)
      images[split] = {{"rows", c.rows}, {"rows_with_images", c.rows_with_images}, {"images", c.images}, {"M", c.slots}, {"m", c.dim}};
    j["images"] = images;
  }
  return j.dump();
}

std::string to_text(const DatasetSummary& s) {
  std::string out;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("dataset                      %s\n", s.name.c_str());
  add("train points (N)             %lld\n", static_cast<long long>(s.num_train));
  add("test points (N')             %lld\n", static_cast<long long>(s.num_test));
  add("labels (L)                   %lld\n", static_cast<long long>(s.num_labels));
  if (s.num_features) add("BoW features (F)             %lld\n", static_cast<long long>(s.num_features));
  add("avg labels / point           %.2f\n", s.avg_labels_per_point);
  add("avg points / label           %.2f\n", s.avg_points_per_label);
  add("labels with >= 5 points      %lld (%.1f%%)\n", static_cast<long long>(s.labels_with_5_or_more),
      s.num_labels ? 100.0 * static_cast<double>(s.labels_with_5_or_more) / static_cast<double>(s.num_labels) : 0.0);
  add("labels unseen in train       %lld\n", static_cast<long long>(s.labels_unseen_in_train));
  add("rows without labels          train %lld, test %lld\n", static_cast<long long>(s.train_rows_without_labels),
      static_cast<long long>(s.test_rows_without_labels));
  if (s.filtered_test_pairs) add("filtered test pairs          %lld\n", static_cast<long long>(s.filtered_test_pairs));
  for (const auto& label : s.dominant_labels) {
    std::string text = label.text.substr(0, 60);
    add("label in most train rows     %lld \"%s\" in %.0f%% of them: P@k rewards ranking it first for any query; read PSP@k\n",
        static_cast<long long>(label.label), text.c_str(), 100.0 * label.train_fraction);
  }
  out += "label frequency quantiles   ";
  for (auto [q, v] : s.label_frequency_quantiles) add(" q%g=%lld", q * 100, static_cast<long long>(v));
  out += "\n";
  auto text_line = [&](const char* what, const TextLengthStats& t) {
    add("words per %-18s mean %.1f, median %lld, max %lld, empty %lld\n", what, t.mean_words,
        static_cast<long long>(t.median_words), static_cast<long long>(t.max_words), static_cast<long long>(t.empty));
  };
  text_line("train text", s.train_text);
  text_line("test text", s.test_text);
  text_line("label text", s.label_text);
  for (const auto& [split, c] : s.images)
    add("images of %-18s %lld of %lld items have some (%.1f%%), %.2f per item; M = %lld slots of m = %lld numbers\n", split.c_str(),
        static_cast<long long>(c.rows_with_images), static_cast<long long>(c.rows),
        c.rows ? 100.0 * static_cast<double>(c.rows_with_images) / static_cast<double>(c.rows) : 0.0,
        c.rows ? static_cast<double>(c.images) / static_cast<double>(c.rows) : 0.0, static_cast<long long>(c.slots), static_cast<long long>(c.dim));
  return out;
}

}  // namespace xmc
