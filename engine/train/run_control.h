#pragma once
// Plain C++. The user's hold on a training run, from any thread: a stop (the run ends at the next step boundary,
// or drops the evaluation or epoch start it is in, and checkpoints) and a pause (held between steps).
#include <atomic>

#include "engine/train/run_events.h"

namespace xmc {

struct RunControl {
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> paused{false};

  /// Waits while paused (until released or asked to stop), telling `events` that the run paused and resumed.
  void wait_while_paused(RunEvents& events) const;
};

}  // namespace xmc
