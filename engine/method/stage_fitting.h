#pragma once
// Engine-internal (includes torch). How a method without gradients trains its stages (xrlinear: a label tree's
// linear rankers, node by node): it fits a stage in parts, each a share of the stage's work of similar cost, in
// order. The trainer makes no optimiser and no learning rate for it; between parts it may pause, stop or write a
// checkpoint, and a resumed stage fits only the parts its method's state (saved in checkpoints) has not fitted.
#include <cstdint>
#include <limits>

#include "engine/method/training_stages.h"

namespace xmc {

/// Where a stage's fitting stands: parts [0, done) are fitted, of `total`.
struct FitParts {
  std::int64_t done = 0;
  std::int64_t total = 0;
};

class StageFitting {
 public:
  virtual ~StageFitting() = default;

  /// The parts of `stage`'s current epoch and how many are fitted; asked after begin_stage() (also when a run
  /// resumes inside the stage, where its state says how far it got).
  virtual FitParts fit_parts(const StageSpec& stage) const = 0;
  /// Fits part `part` (in [done, total), in order) and returns its objective, stored under the stage's loss_series
  /// (NaN when the part has none).
  virtual double fit_part(const StageSpec& stage, std::int64_t part, TrainContext& context) = 0;
};

/// What fit_part() returns for a part without an objective.
inline constexpr double kNoObjective = std::numeric_limits<double>::quiet_NaN();

}  // namespace xmc
