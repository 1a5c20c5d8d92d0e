#pragma once
// Engine-internal (includes torch). The one training loop of every method (engine/method/method.h): for
// each of the method's stages, epochs of batches; per step the method's forward/backward, then clipping,
// the learning-rate schedule and the optimiser step; between epochs evaluation, t-SNE snapshots and
// checkpoints; pause and stop at step boundaries. It publishes what happens as TrainEvents and never
// touches the run store (the run recorder subscribes for that).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/distributed/distributed_options.h"
#include "engine/method/method.h"
#include "engine/config/train_config.h"
#include "engine/records/train_events.h"
#include "engine/train/training_run.h"

namespace xmc {

class RunStore;

struct TrainerSetup {
  TrainConfig config;
  std::filesystem::path run_dir;        ///< the run's files: checkpoint.pt, vocab.txt
  const RunStore* store = nullptr;      ///< the run's store, open while it trains (a method built on another run loads it from there; null = none)
  std::int64_t run_id = 0;              ///< stamped on every event (and on checkpoints)
  std::string store_id;                 ///< the run store's identity, stamped on checkpoints ("" = none)
  bool resume = false;                  ///< continue from run_dir/checkpoint.pt
  bool restart = false;                 ///< an existing run without a checkpoint trains again from step 0
  std::string expected_fingerprint;     ///< the dataset's fingerprint when the run started ("" = not known)
  /// Data-parallel training (world_size > 1): rank 0 has the run store and sends the others the config, the
  /// run's identity and, when resuming, its checkpoint; ranks > 0 start with only these options and a
  /// scratch run_dir. Only rank 0 evaluates, checkpoints and publishes to the store.
  DistributedOptions distributed;
  /// Called when the run fails, for what the other processes of the job say about themselves ("rank 1 was
  /// killed by signal 9"), appended to the failure message. Empty: nothing to add.
  std::function<std::string()> describe_peers;
};

class Trainer {
 public:
  explicit Trainer(TrainerSetup setup);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Listeners are called on the training thread, in order, for every event.
  void subscribe(std::function<void(const TrainEvent&)> listener);
  /// Thread-safe: finish the current step, write a checkpoint and return RunOutcome::Stopped.
  void request_stop();
  /// Thread-safe: hold (or release) the run between steps.
  void set_paused(bool paused);
  /// Replaces TrainerSetup::describe_peers (before run()).
  void describe_peers_with(std::function<std::string()> describe);

  /// Trains to the end or until stopped. On failure a Failed event is published and xmc::Error thrown;
  /// checkpoints already written stay intact.
  TrainResult run(Progress& progress = silent_progress());

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
