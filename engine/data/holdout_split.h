#pragma once
// A development split: some of a dataset's training queries held out as the test split of a new dataset folder,
// so that a value (a fusion weight, a number of neighbours, a schedule) is chosen on queries the model did not
// train on and the real test split is never looked at. The labels, their texts and images stay as they are; the
// training queries' texts, labels, BoW features and images are divided between the two splits.
#include <cstdint>
#include <filesystem>

#include "engine/core/progress.h"
#include "engine/data/dataset.h"

namespace xmc {

struct HoldoutSplitOptions {
  double fraction = 0.2;   ///< of the training queries, held out (at least one query on each side)
  std::uint64_t seed = 0;  ///< of the draw (the same rows for the same seed on every platform)
};

/// The split of `d`: its training queries in a seeded random order, the last round(fraction × n) of them (in
/// their original order) as the test split, the others (in their original order) as the training split.
/// Throws ConfigError for a fraction outside (0, 1) or one that leaves either side empty.
Dataset holdout_split(const Dataset& d, const HoldoutSplitOptions& options);

}  // namespace xmc
