#pragma once
// Evaluates a score file (XC sparse format, "label:score" per row) against a truth file, streaming both
// in lock-step: the core of `xmc eval`.
#include <filesystem>
#include <optional>

#include "engine/core/progress.h"
#include "engine/data/propensity.h"
#include "engine/eval/metrics.h"

namespace xmc {

struct PredictionFileEval {
  std::filesystem::path truth;                 ///< tst_X_Y.txt
  std::filesystem::path predictions;           ///< scores, header "N L"; ranked by score, ties by lower label
  std::optional<std::filesystem::path> train;  ///< trn_X_Y.txt: label frequencies for PSP and deciles
  std::optional<std::filesystem::path> filter; ///< filter_labels_test.txt: pairs removed from predictions
  PropensityParams propensity;
  EvalOptions options;
};

/// Streams both files and returns the metrics. Files that disagree in row or label count, or options that
/// need the train file without it, are errors naming the file and both numbers.
EvalResult evaluate_prediction_file(const PredictionFileEval& request, Progress& progress = silent_progress());

}  // namespace xmc
