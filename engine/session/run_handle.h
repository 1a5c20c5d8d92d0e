#pragma once
// A training run started or resumed through the Session (plain C++): subscribe to its events, run it on
// the calling thread (the GUI uses a worker thread), and stop or pause it from any other thread.
#include <cstdint>
#include <functional>
#include <memory>

#include "engine/core/progress.h"
#include "engine/train/train_config.h"
#include "engine/train/train_events.h"

namespace xmc {

class TrainingRun;

class RunHandle {
 public:
  explicit RunHandle(std::unique_ptr<TrainingRun> run);
  ~RunHandle();
  RunHandle(RunHandle&&) noexcept;
  RunHandle& operator=(RunHandle&&) noexcept;

  std::int64_t run_id() const;
  const TrainConfig& config() const;
  /// Listeners are called on the training thread, in order, after the run store has recorded the event.
  void subscribe(std::function<void(const TrainEvent&)> listener);
  /// Thread-safe: finish the current step, write a checkpoint, mark the run "stopped" and return.
  void request_stop();
  /// Thread-safe: hold (or release) the run between steps; the store shows "paused".
  void set_paused(bool paused);
  /// Trains to the end or until stopped. Throws xmc::Error when the run fails (the store then says why).
  TrainResult run(Progress& progress = silent_progress());

 private:
  std::unique_ptr<TrainingRun> run_;
};

}  // namespace xmc
