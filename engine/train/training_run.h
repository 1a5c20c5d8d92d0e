#pragma once
// The one entry point to training for the CLI and the GUI (plain C++, no torch in this header):
// create or resume a run in the run store, subscribe to its events, run it to the end on the calling
// thread, and stop or pause it from any other thread. Everything a run does is recorded in the store.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/distributed/distributed_options.h"
#include "engine/eval/metrics.h"
#include "engine/config/train_config.h"
#include "engine/records/train_events.h"

namespace xmc {

class TrainingRun {
 public:
  /// Validates `config` and records a new run (status "created") in the store at `db_path`. With
  /// `distributed` (world_size > 1) this process is rank 0 of a data-parallel job (run_rank_worker() runs
  /// the other ranks).
  TrainingRun(TrainConfig config, const std::filesystem::path& db_path, const DistributedOptions& distributed = {});
  /// Re-opens run `run_id` to continue from its latest checkpoint; `overrides` ("key=value") may change
  /// keys that do not alter the model (e.g. epochs, max_steps, eval.every). It may resume with another
  /// number of processes than it started with. A run that wrote a checkpoint whose file is gone is refused
  /// (resuming would silently start over); `restart` trains it again from step 0 on purpose, in a fresh folder,
  /// dropping what it recorded.
  static TrainingRun resume(std::int64_t run_id, const std::filesystem::path& db_path, const std::vector<std::string>& overrides = {},
                            const DistributedOptions& distributed = {}, bool restart = false);
  ~TrainingRun();
  TrainingRun(TrainingRun&&) noexcept;
  TrainingRun& operator=(TrainingRun&&) noexcept;

  std::int64_t run_id() const;
  const TrainConfig& config() const;

  /// Listeners are called on the training thread, in order, for every event.
  void subscribe(std::function<void(const TrainEvent&)> listener);

  /// Thread-safe: finish the current step, write a checkpoint, mark the run "stopped" and return.
  void request_stop();
  /// Thread-safe: hold (or release) the run between steps; the store shows "paused".
  void set_paused(bool paused);
  /// What the other processes of a data-parallel job say about themselves when the run fails (appended to
  /// the failure message). Set before run().
  void describe_peers_with(std::function<std::string()> describe);

  /// Trains to the end or until stopped. On failure (bad data, NaN loss, out of memory) the run is
  /// marked "failed" with the error, a Failed event is published, and xmc::Error is thrown; checkpoints
  /// already written stay intact.
  TrainResult run(Progress& progress = silent_progress());

  /// Folder of a run's files (checkpoint, vocabulary): see engine/store/run_files.h.
  static std::filesystem::path run_directory(const std::filesystem::path& db_path, std::int64_t run_id);

 private:
  struct Impl;
  explicit TrainingRun(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
