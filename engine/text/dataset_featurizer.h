#pragma once
// `xmc dataset featurize`: tf-idf features of a dataset folder's texts, stored with the dataset so that runs
// share one vocabulary fit on the training queries alone (never the test texts):
//   features/tfidf.txt                      the vectorizer (tfidf_vectorizer.h's file)
//   features/trn.csr, tst.csr, lbl.csr      the rows of trn.raw.txt, tst.raw.txt, lbl.raw.txt (csr_file.h)
// xrlinear reads them with `xrlinear.features: dataset`.
#include <cstdint>
#include <filesystem>

#include "engine/core/progress.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {

namespace dataset_feature_files {
inline constexpr const char* kVectorizer = "features/tfidf.txt";
inline constexpr const char* kTrain = "features/trn.csr";
inline constexpr const char* kTest = "features/tst.csr";
inline constexpr const char* kLabels = "features/lbl.csr";
}  // namespace dataset_feature_files

struct FeaturizeSummary {
  std::int64_t features = 0;
  std::int64_t texts = 0;   ///< training, test and label texts featurized
  std::int64_t nnz = 0;     ///< non-zeros written, all three files
  double seconds = 0;
};

/// Fits the vectorizer on `dir`'s trn.raw.txt and writes the four files (replacing earlier ones). InputError for
/// a missing or unreadable text file; ConfigError for options out of range.
FeaturizeSummary featurize_dataset(const std::filesystem::path& dir, const TfidfOptions& options, Progress& progress = silent_progress());

}  // namespace xmc
