#pragma once
// Plain C++. The user's hold on a training run, from any thread: a stop (the run ends at the next step boundary,
// or drops the evaluation or epoch start it is in, and checkpoints) and a pause (held between steps).
#include <atomic>
#include <cstdint>
#include <string>

#include "engine/train/run_events.h"

namespace xmc {

struct RunControl {
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> paused{false};

  /// Waits while paused (until released or asked to stop), telling `events` that the run paused and resumed.
  void wait_while_paused(RunEvents& events) const;
};

// A stop asked for unwinds the training loop through one of these (caught in Trainer::run, which checkpoints where
// the run stood); each says how the run ended and what a resume does.

/// At a step boundary.
struct StopRequested {
  std::string outcome(std::int64_t step) const;
};
/// While an epoch's batches were made: the checkpoint is at that epoch's start (`epoch`, from 0).
struct EpochStartStopped {
  std::string outcome(std::int64_t step, std::int64_t epoch) const;
};
/// While an evaluation ran: the evaluation is dropped, training since the last checkpoint is kept.
struct EvaluationStopped {
  bool final = false;  ///< the run's final evaluation (after its last step, or after max_steps): a resume runs it again
  std::string outcome(std::int64_t step) const;
};

}  // namespace xmc
