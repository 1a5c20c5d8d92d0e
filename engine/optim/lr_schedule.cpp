#include "engine/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace xmc {

double LrSchedule::factor(std::int64_t step) const {
  if (step < warmup_steps) return static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  if (kind == "constant") return 1.0;
  const double span = static_cast<double>(std::max<std::int64_t>(1, total_steps - warmup_steps));
  const double progress = std::clamp(static_cast<double>(step - warmup_steps) / span, 0.0, 1.0);
  if (kind == "cosine") return 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return 1.0 - progress;
}

}  // namespace xmc
