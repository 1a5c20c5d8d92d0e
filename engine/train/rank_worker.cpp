#include "engine/train/rank_worker.h"

#include <unistd.h>

#include <filesystem>

#include "engine/core/error.h"
#include "engine/train/trainer.h"

namespace xmc {

TrainResult run_rank_worker(const DistributedOptions& options, const std::function<void(const TrainEvent&)>& listener, Progress& progress) {
  validate(options);
  if (options.rank == 0) throw ConfigError("run_rank_worker: rank 0 owns the run; start it with `xmc train --config ...`");
  // The vocabulary and a received checkpoint go to a folder of this process's own, emptied first (a stale
  // one from a killed job with a reused pid held another dataset's vocabulary, which the build loaded).
  const auto scratch = fresh_rank_scratch_directory(options.rank, static_cast<long>(::getpid()));
  struct RemoveScratch {
    std::filesystem::path path;
    ~RemoveScratch() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } remove_scratch{scratch};
  TrainerSetup setup;
  setup.run_dir = scratch;
  setup.distributed = options;
  Trainer trainer(std::move(setup));
  if (listener) trainer.subscribe(listener);
  return trainer.run(progress);
}

}  // namespace xmc
