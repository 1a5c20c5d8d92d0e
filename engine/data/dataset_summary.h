#pragma once
// The statistics `xmc dataset info` prints and the workbench's launch form shows.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace xmc {

struct TextLengthStats {
  double mean_words = 0;
  std::int64_t median_words = 0;
  std::int64_t max_words = 0;
  std::int64_t empty = 0;  ///< texts with no words
};

struct DatasetSummary {
  std::string name;
  std::int64_t num_train = 0;          ///< N
  std::int64_t num_test = 0;           ///< N'
  std::int64_t num_labels = 0;         ///< L
  std::int64_t num_features = 0;       ///< F (0 without BoW features)
  double avg_labels_per_point = 0;     ///< train
  double avg_points_per_label = 0;     ///< train
  std::int64_t labels_with_5_or_more = 0;      ///< labels with >= 5 train points
  std::int64_t labels_unseen_in_train = 0;     ///< labels with no train point
  std::int64_t train_rows_without_labels = 0;
  std::int64_t test_rows_without_labels = 0;
  std::int64_t filtered_test_pairs = 0;
  /// Labels in more than half of the training rows (most frequent first, at most 5): with one, P@1 rewards
  /// ranking it first whatever the query (WordNet's root synset is in every row), so PSP@k says more.
  struct DominantLabel {
    std::int64_t label = 0;
    std::string text;
    double train_fraction = 0;
  };
  std::vector<DominantLabel> dominant_labels;
  /// Train label frequency at the quantiles 0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.
  std::vector<std::pair<double, std::int64_t>> label_frequency_quantiles;
  TextLengthStats train_text, test_text, label_text;
  /// Image banks (images/*.npy) per split, in the order train, test, labels; a split without one is absent.
  std::vector<std::pair<std::string, ImageCoverage>> images;
};

DatasetSummary summarize_dataset(const Dataset& d);

/// One JSON object (numbers as numbers), for `--json` and the run store.
std::string to_json(const DatasetSummary& s);
/// A human-readable multi-line table.
std::string to_text(const DatasetSummary& s);

}  // namespace xmc
