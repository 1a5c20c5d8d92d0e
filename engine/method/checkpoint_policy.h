#pragma once
// Plain C++ (no torch). When a training run writes its checkpoints besides the ones every run writes (at a
// stop, between stages, at the end): every checkpoint.every epochs, and inside epochs every
// checkpoint.every_steps steps or checkpoint.every_minutes of training since the last one. With deferred table
// rows, one placed by time waits for a step at which the rows are brought up to date anyway, so that where
// checkpoints fall changes none of the run's arithmetic.
#include <chrono>
#include <cstdint>

namespace xmc {

struct CheckpointSchedule {
  std::int64_t every_epochs = 1;   ///< 0 = only at the end
  std::int64_t every_steps = 0;    ///< 0 = off
  double every_minutes = 5;        ///< 0 = off
};

class CheckpointPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  explicit CheckpointPolicy(CheckpointSchedule schedule) : schedule_(schedule) {}

  /// A checkpoint was written (or the run started) at `step`, at `now`.
  void written_at(std::int64_t step, Clock::time_point now = Clock::now());

  /// Whether one is due before training step `step` inside an epoch. `defers_rows`: the optimiser brings deferred
  /// rows up to date at some steps only, `rows_synced_here` says whether `step` is one of them.
  bool due_within_epoch(std::int64_t step, bool defers_rows, bool rows_synced_here, Clock::time_point now = Clock::now()) const;

  /// Whether one is due after `epochs_done` epochs of a stage (never after its last: the stage's end writes one).
  bool due_after_epoch(std::int64_t epochs_done, bool last_of_stage) const;

 private:
  CheckpointSchedule schedule_;
  std::int64_t last_step_ = 0;
  Clock::time_point last_time_{};
};

}  // namespace xmc
