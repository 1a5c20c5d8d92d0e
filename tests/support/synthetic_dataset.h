#pragma once
// A small learnable dataset for training tests: 12 labels named by keywords ("kw0 topic" …); each query
// names its 1-3 labels' keywords among 4 noise words. Random ranking gets P@1 = E|y| / L = 2/12.
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace xmc::test {

/// Texts name their labels' keywords among four noise words drawn from `noise_words` (the vocabulary's size).
inline void write_keyword_dataset(const std::filesystem::path& dir, std::uint64_t seed, int num_train, int num_test, int noise_words = 40) {
  constexpr int kLabels = 12;
  std::mt19937_64 rng(seed);
  Dataset d;
  d.meta.name = "synthetic";
  for (int l = 0; l < kLabels; ++l) d.label_text.push_back("kw" + std::to_string(l) + " topic");
  auto make = [&](int n, std::vector<std::string>& texts, CsrMatrix& labels) {
    std::vector<std::vector<std::int32_t>> rows;
    for (int i = 0; i < n; ++i) {
      std::vector<std::int32_t> y;
      const int count = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < count; ++j) y.push_back(static_cast<std::int32_t>(rng() % kLabels));
      std::string text;
      for (auto l : y) text += "kw" + std::to_string(l) + " ";
      for (int j = 0; j < 4; ++j) text += "noise" + std::to_string(rng() % static_cast<std::uint64_t>(noise_words)) + " ";
      texts.push_back(text);
      rows.push_back(y);
    }
    labels = csr_from_rows(rows, kLabels);
  };
  make(num_train, d.train_text, d.train_labels);
  make(num_test, d.test_text, d.test_labels);
  save_dataset(d, dir);
}

}  // namespace xmc::test
