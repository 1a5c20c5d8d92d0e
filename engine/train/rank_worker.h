#pragma once
// Plain C++ (no torch in this header): a rank > 0 of a data-parallel training job. It joins rank 0 at
// options.master_host:master_port, receives the run's config (and, when resuming, its checkpoint) from it,
// trains its share of every batch until rank 0's run ends, and writes nothing to any run store: rank 0
// records the run. Its files live in a scratch folder that is removed at the end.
#include <functional>

#include "engine/core/progress.h"
#include "engine/distributed/distributed_options.h"
#include "engine/records/train_events.h"

namespace xmc {

/// Throws xmc::Error when the job fails (a rank died, the data differs from rank 0's, ...).
TrainResult run_rank_worker(const DistributedOptions& options, const std::function<void(const TrainEvent&)>& listener = {},
                            Progress& progress = silent_progress());

}  // namespace xmc
