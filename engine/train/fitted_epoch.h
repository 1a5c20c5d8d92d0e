#pragma once
// Engine-internal (includes torch). One epoch of a stage fitted without gradients (stage_fitting.h: xrlinear's
// rankers), part after part from where the method's state stands. Each part is a step of the run's axis: its
// objective is stored as the stage's loss, with no learning rate, and the trainer may pause, stop or write a
// checkpoint before each.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "engine/core/progress.h"
#include "engine/method/stage_fitting.h"

namespace xmc {

struct FittedEpochHooks {
  /// Before part `part`: pauses, stops (by throwing) or checkpoints as the trainer would before a step; false once
  /// the run's max_steps is reached.
  std::function<bool(std::int64_t part)> ready_for_part;
  /// Part `part` of `total` is fitted: its objective (NaN: none) and the time it took.
  std::function<void(std::int64_t part, std::int64_t total, double objective, std::chrono::steady_clock::duration took)> fitted;
};

/// Fits the epoch's parts not fitted yet; returns false when ready_for_part() stopped it. `progress` counts the parts as
/// `task`.
bool fit_epoch(StageFitting& fitting, const StageSpec& stage, TrainContext& context, std::string_view task, Progress& progress,
               const FittedEpochHooks& hooks);

}  // namespace xmc
