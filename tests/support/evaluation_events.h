#pragma once
// An Evaluation event as a training run sends it, for the Live tab's tests: five metrics at `epoch`, and with
// `two_modes` the same metrics of a second mode ("emb/P@1", ...), so that the evaluation view needs a panel per metric.
#include <cstdint>
#include <string>

#include "engine/records/train_events.h"

namespace xmc::test {

inline TrainEvent evaluation_event(std::int64_t run, double epoch, bool two_modes) {
  TrainEvent e;
  e.kind = TrainEvent::Kind::Evaluation;
  e.run_id = run;
  e.epoch = epoch;
  for (const char* m : {"P@1", "P@3", "P@5", "PSP@1", "PSP@5"}) {
    e.metrics.emplace_back(m, 0.3 + 0.01 * epoch);
    if (two_modes) e.mode_metrics.emplace_back(std::string("emb/") + m, 0.2 + 0.01 * epoch);
  }
  return e;
}

}  // namespace xmc::test
