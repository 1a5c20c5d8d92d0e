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

}  // namespace xmc
