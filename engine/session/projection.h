#pragma once
// The embedding projector's data: a run's label vectors or test-query vectors in 2-D (PCA, or t-SNE on a
// sample), each point with its id, text and, for labels, the decile of its training frequency; for
// queries, their true labels (to colour the positives of a chosen label). Plain data;
// Session::projection computes it.
#include <cstdint>
#include <string>
#include <vector>

namespace xmc {

struct ProjectionOptions {
  std::string what = "labels";  ///< labels | queries (the test set's)
  std::string method = "pca";   ///< pca | tsne
  std::int64_t sample = 20000;  ///< at most this many points, drawn at random (t-SNE: at most 5000)
  std::string mode;             ///< inference mode whose vectors are projected ("" = the primary)
  std::uint64_t seed = 1;
};

struct ProjectedPoint {
  float x = 0, y = 0;
  std::int64_t id = 0;  ///< label id, or test row
  int decile = -1;      ///< labels: 0 = the most frequent tenth ... 9 = the tail; queries: -1
};

struct Projection {
  ProjectionOptions options;
  std::vector<ProjectedPoint> points;
  std::vector<std::string> texts;                      ///< per point
  std::vector<std::vector<std::int32_t>> true_labels;  ///< queries: per point, their labels
  std::vector<std::string> label_texts;                ///< queries: every label's text (to choose one by text)
};

}  // namespace xmc
