#pragma once
// Trains a sweep's points, each as a normal run of the store (tagged "sweep-<id>"), one after another or
// `parallel` at a time. A point whose run completed is skipped; one whose run stopped or failed is resumed
// from its checkpoint; one without a run starts one. So running a sweep again resumes it. Plain C++: the
// CLI runs it on its thread, the workbench on a worker thread.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/records/train_events.h"

namespace xmc {

class RunHandle;

class SweepRunner {
 public:
  struct Outcome {
    int completed = 0;  ///< points whose run is completed now (skipped ones included)
    int stopped = 0;    ///< stopped by request_stop(), or never started because of it
    int failed = 0;
    std::vector<std::string> errors;  ///< "point 3 (lr=0.1): NaN loss at step 12"
  };
  /// A point's run starts (or resumes): its position and run id.
  using StartListener = std::function<void(std::int64_t position, std::int64_t run)>;
  /// Every event of every point's run, serialised (never two at once), on the training threads.
  using EventListener = std::function<void(std::int64_t position, std::int64_t run, const TrainEvent&)>;

  SweepRunner(std::filesystem::path db_path, std::int64_t sweep, int parallel = 1);
  ~SweepRunner();

  void on_start(StartListener listener) { on_start_ = std::move(listener); }
  void on_event(EventListener listener) { on_event_ = std::move(listener); }

  /// Trains every point that is not completed and returns when none is left or after request_stop().
  /// `progress` gets the steps of the one running point (with parallel > 1 it is not used).
  Outcome run(Progress& progress = silent_progress());
  /// Thread-safe: the running points stop with a checkpoint (their runs say "stopped"), no other starts.
  void request_stop();
  /// Thread-safe: holds (or releases) the running points between steps; points that start later start held.
  void set_paused(bool paused);

 private:
  void train_point(std::size_t index, Progress& progress, Outcome& outcome);

  std::filesystem::path db_path_;
  std::int64_t sweep_;
  int parallel_;
  StartListener on_start_;
  EventListener on_event_;
  std::atomic<bool> stop_{false};
  bool paused_ = false;              // guarded by mutex_
  std::mutex mutex_;                 // guards active_, the outcome and listener calls
  std::vector<RunHandle*> active_;   // the points training now
};

}  // namespace xmc
