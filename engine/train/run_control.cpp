#include "engine/train/run_control.h"

#include <chrono>
#include <thread>

namespace xmc {

void RunControl::wait_while_paused(RunEvents& events) const {
  if (!paused.load()) return;
  events.publish(TrainEvent::Kind::Paused, "paused");
  events.phase("paused");
  while (paused.load() && !stop_requested.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  events.publish(TrainEvent::Kind::Resumed, "resumed");
  events.phase("resumed");
}

std::string StopRequested::outcome(std::int64_t step) const { return "stopped at step " + std::to_string(step) + " (checkpoint written)"; }

std::string EpochStartStopped::outcome(std::int64_t step, std::int64_t epoch) const {
  return "stopped before epoch " + std::to_string(epoch + 1) + "'s training, while its batches or shortlists were made, at step " + std::to_string(step) +
         " (checkpoint written; a resume starts that epoch again)";
}

std::string EvaluationStopped::outcome(std::int64_t step) const {
  return "stopped during the evaluation at step " + std::to_string(step) + " (checkpoint written; " +
         (final ? "a resume runs the final evaluation" : "a resume goes on training without that evaluation") + ")";
}

}  // namespace xmc
