#include "engine/method/checkpoint_policy.h"

namespace xmc {

void CheckpointPolicy::written_at(std::int64_t step, Clock::time_point now) {
  last_step_ = step;
  last_time_ = now;
}

bool CheckpointPolicy::due_within_epoch(std::int64_t step, bool defers_rows, bool rows_synced_here, Clock::time_point now) const {
  if (step == last_step_) return false;
  if (schedule_.every_steps > 0 && step - last_step_ >= schedule_.every_steps) return true;
  if (defers_rows && !rows_synced_here) return false;
  return schedule_.every_minutes > 0 && std::chrono::duration<double>(now - last_time_).count() >= 60 * schedule_.every_minutes;
}

bool CheckpointPolicy::due_after_epoch(std::int64_t epochs_done, bool last_of_stage) const {
  return !last_of_stage && schedule_.every_epochs > 0 && epochs_done % schedule_.every_epochs == 0;
}

}  // namespace xmc
