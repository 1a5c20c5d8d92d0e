#pragma once
// Writes a training run's events into the run store (plain C++): status changes, step scalars (buffered,
// written at most every two seconds and at every epoch end, with a heartbeat), evaluations of every
// inference mode, decile tables, t-SNE snapshots and the checkpoint artifact. The trainer publishes; this
// subscriber is the only part of training that touches SQLite.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/store/run_store.h"
#include "engine/records/train_events.h"

namespace xmc {

class RunRecorder {
 public:
  /// Records into `store` (the run's one store handle, which outlives the recorder).
  RunRecorder(RunStore& store, std::int64_t run_id);

  /// Subscribe this to the trainer: records `event` (throws what the store throws).
  void record(const TrainEvent& event);
  /// Writes the buffered scalars now.
  void flush();

 private:
  void flush_if_due();
  void record_step(const TrainEvent& e);
  void record_evaluation(const TrainEvent& e);
  void record_system_use(const TrainEvent& e);

  RunStore& store_;
  std::int64_t run_id_;
  std::vector<ScalarPoint> pending_;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

}  // namespace xmc
