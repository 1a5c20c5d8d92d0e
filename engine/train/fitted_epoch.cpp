#include "engine/train/fitted_epoch.h"

#include "engine/core/error.h"

namespace xmc {

bool fit_epoch(StageFitting& fitting, const StageSpec& stage, TrainContext& context, std::string_view task, Progress& progress,
               const FittedEpochHooks& hooks) {
  const FitParts parts = fitting.fit_parts(stage);
  if (parts.total < 0 || parts.done < 0 || parts.done > parts.total)
    throw Error("stage " + stage.name + ": " + std::to_string(parts.done) + " of " + std::to_string(parts.total) + " parts fitted is not a place to resume from");
  progress.start(task, parts.total);
  progress.update(parts.done);
  for (std::int64_t part = parts.done; part < parts.total; ++part) {
    if (!hooks.ready_for_part(part)) return false;
    const auto start = std::chrono::steady_clock::now();
    const double objective = fitting.fit_part(stage, part, context);
    hooks.fitted(part, parts.total, objective, std::chrono::steady_clock::now() - start);
    progress.update(part + 1);
  }
  progress.finish();
  return true;
}

}  // namespace xmc
