#pragma once
// A dataset in the canonical folder layout (Extreme Classification Repository raw-text convention):
//   trn.raw.txt, tst.raw.txt, lbl.raw.txt   one text per line
//   trn_X_Y.txt, tst_X_Y.txt                label matrices (XC sparse format, header "N L")
//   filter_labels_test.txt                  optional (row, label) pairs never to predict
//   trn_X_Xf.txt, tst_X_Xf.txt              optional sparse BoW features (header "N F")
//   dataset.json                            optional name, propensity A/B, source
//   images/trn.npy, tst.npy, lbl.npy        optional image feature banks [rows, M, m] (engine/data/image_bank.h),
//   images/<split>_count.npy                with optional counts, and images/<split>_files.txt listing image files
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/filter_pairs.h"
#include "engine/data/image_bank.h"
#include "engine/data/propensity.h"

namespace xmc {

struct DatasetMeta {
  std::string name;
  std::string source;  ///< how it was made, e.g. "mulan import of bibtex-train.arff"
  PropensityParams propensity;
  std::vector<std::string> feature_names;  ///< BoW vocabulary, when the dataset has features
};

struct Dataset {
  std::filesystem::path dir;
  DatasetMeta meta;
  std::vector<std::string> train_text, test_text, label_text;
  CsrMatrix train_labels, test_labels;
  FilterPairs test_filter;
  std::optional<CsrMatrix> train_features, test_features;
  /// Image feature banks, row for row with the texts; null for a split without one.
  std::shared_ptr<const ImageBank> train_images, test_images, label_images;
  bool has_images() const { return train_images || test_images || label_images; }

  std::int64_t num_train() const { return train_labels.rows; }
  std::int64_t num_test() const { return test_labels.rows; }
  std::int64_t num_labels() const { return train_labels.cols; }
  /// Train frequency of every label.
  std::vector<std::int64_t> label_frequencies() const { return train_labels.column_counts(); }
  std::vector<double> inverse_propensities() const;
};

namespace dataset_files {
inline constexpr const char* kTrainText = "trn.raw.txt";
inline constexpr const char* kTestText = "tst.raw.txt";
inline constexpr const char* kLabelText = "lbl.raw.txt";
inline constexpr const char* kTrainLabels = "trn_X_Y.txt";
inline constexpr const char* kTestLabels = "tst_X_Y.txt";
inline constexpr const char* kTestFilter = "filter_labels_test.txt";
inline constexpr const char* kTrainFeatures = "trn_X_Xf.txt";
inline constexpr const char* kTestFeatures = "tst_X_Xf.txt";
inline constexpr const char* kMeta = "dataset.json";
}  // namespace dataset_files

struct DatasetLoadOptions {
  bool load_features = true;  ///< read trn/tst_X_Xf.txt when present
  bool load_images = true;    ///< open images/*.npy when present (memory-mapped: cheap)
};

/// Loads and cross-checks a dataset folder: row counts of texts and matrices agree, test and train
/// have the same label count as lbl.raw.txt, filter pairs are in range. Errors name the file.
Dataset load_dataset(const std::filesystem::path& dir, DatasetLoadOptions options = {},
                     Progress& progress = silent_progress());

/// Reads the given sparse features (trn_X_Xf.txt and tst_X_Xf.txt) of a dataset loaded without them into
/// d.train_features and d.test_features, checked against its rows and its feature names. InputError naming the file
/// when one is missing or does not fit.
void load_given_features(Dataset& d, Progress& progress = silent_progress());

/// Writes every part of `d` into `dir` (created if needed).
void save_dataset(const Dataset& d, const std::filesystem::path& dir);

DatasetMeta read_dataset_meta(const std::filesystem::path& dir);
void write_dataset_meta(const std::filesystem::path& dir, const DatasetMeta& meta);

/// Content hash of the canonical files of a dataset folder (16 hex digits).
std::string dataset_fingerprint(const std::filesystem::path& dir);

}  // namespace xmc
