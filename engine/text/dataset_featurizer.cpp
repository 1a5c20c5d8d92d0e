#include "engine/text/dataset_featurizer.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/csr_file.h"
#include "engine/data/dataset.h"
#include "engine/data/text_lines.h"

namespace xmc {
namespace {

constexpr std::size_t kChunk = 8192;  ///< texts per progress update

/// The tf-idf rows of `texts`, chunk by chunk, reported to `progress` as `task`.
CsrMatrix featurize(const TfidfVectorizer& vectorizer, const std::vector<std::string>& texts, Progress& progress, const std::string& task) {
  CsrMatrix out;
  out.rows = 0;
  out.cols = vectorizer.num_features();
  progress.start(task, static_cast<std::int64_t>(texts.size()));
  for (std::size_t start = 0; start < texts.size(); start += kChunk) {
    if (progress.cancelled()) throw Cancelled();
    const std::vector<std::string> chunk(texts.begin() + static_cast<std::ptrdiff_t>(start),
                                         texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), start + kChunk)));
    const CsrMatrix part = vectorizer.transform(chunk);
    for (std::int64_t r = 0; r < part.rows; ++r) out.append_row(part.row_indices(r), part.row_values(r));
    progress.update(static_cast<std::int64_t>(start + chunk.size()));
  }
  progress.finish();
  return out;
}

}  // namespace

FeaturizeSummary featurize_dataset(const std::filesystem::path& dir, const TfidfOptions& options, Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> train = read_text_lines(dir / dataset_files::kTrainText);
  const std::vector<std::string> test = read_text_lines(dir / dataset_files::kTestText);
  const std::vector<std::string> labels = read_text_lines(dir / dataset_files::kLabelText);
  const TfidfVectorizer vectorizer = TfidfVectorizer::fit(train, options, progress);
  std::filesystem::create_directories(dir / "features");
  FeaturizeSummary summary;
  summary.features = vectorizer.num_features();
  const std::pair<const std::vector<std::string>*, const char*> parts[] = {
      {&train, dataset_feature_files::kTrain}, {&test, dataset_feature_files::kTest}, {&labels, dataset_feature_files::kLabels}};
  // The vectorizer goes last: features/ with a vectorizer always has the matrices that match it.
  std::filesystem::remove(dir / dataset_feature_files::kVectorizer);
  for (const auto& [texts, file] : parts) {
    const CsrMatrix m = featurize(vectorizer, *texts, progress, std::string("tf-idf of ") + std::filesystem::path(file).filename().string());
    write_csr_file(dir / file, m);
    summary.texts += m.rows;
    summary.nnz += m.nnz();
  }
  vectorizer.save(dir / dataset_feature_files::kVectorizer);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace xmc
