#pragma once
// A training run started or resumed through the Session (plain C++): subscribe to its events, run it on
// the calling thread (the GUI uses a worker thread), and stop or pause it from any other thread.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "engine/core/progress.h"
#include "engine/distributed/distributed_options.h"
#include "engine/config/train_config.h"
#include "engine/records/train_events.h"

namespace xmc {

class TrainingRun;

/// How many processes train a run: one (the default); `local` processes on this machine (this process is
/// rank 0 and starts ranks 1..local-1 with the xmc binary, each taking a share of every batch); or rank 0 of
/// a multi-host job whose other ranks are started by hand (`xmc train --rank R --world-size N --master ...`).
struct TrainingProcesses {
  int local = 1;                        ///< > 1: a data-parallel job of this many processes on this machine
  std::filesystem::path worker_binary;  ///< the xmc the local workers run ("" = the one beside this program)
  DistributedOptions multi_host;        ///< rank 0's options in a multi-host job (world_size > 1)
  double timeout_minutes = 30;          ///< a rank waiting longer than this for the others fails the job
};

class RunHandle {
 public:
  explicit RunHandle(std::unique_ptr<TrainingRun> run, TrainingProcesses processes = {}, DistributedOptions distributed = {});
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
  /// Trains to the end or until stopped (a local job's workers are started first and waited for last).
  /// Throws xmc::Error when the run fails (the store then says why, naming a worker that died).
  TrainResult run(Progress& progress = silent_progress());

 private:
  std::unique_ptr<TrainingRun> run_;
  TrainingProcesses processes_;
  DistributedOptions distributed_;  ///< this process's place in the job (world_size 1: alone)
};

}  // namespace xmc
