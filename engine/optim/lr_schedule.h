#pragma once
// Learning-rate multiplier at a step: linear warm-up over the first `warmup_steps`, then linear or
// cosine decay to zero at `total_steps`, or constant.
#include <cstdint>
#include <string>

namespace xmc {

struct LrSchedule {
  std::int64_t total_steps = 1;
  std::int64_t warmup_steps = 0;
  std::string kind = "linear";  ///< linear | cosine | constant

  /// Multiplier in [0, 1] for optimiser step `step` (0-based).
  double factor(std::int64_t step) const;
};

}  // namespace xmc
