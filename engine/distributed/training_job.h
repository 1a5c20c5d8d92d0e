#pragma once
// Engine-internal (includes torch). How the processes of a data-parallel training job come together and
// stay in step: rank 0 hands the others the run (config, identity, checkpoint) while each says whether it can
// take part; then the same parameters and batches everywhere, and the other ranks' dropout seeds per step.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/train_config.h"
#include "engine/distributed/communicator.h"
#include "engine/distributed/distributed_options.h"

namespace xmc {

/// What this process brings to the job: rank 0 the run, the others only `options` (and a scratch folder).
struct JobJoinRequest {
  DistributedOptions options;
  TrainConfig config;                        ///< rank 0's run config (ignored on other ranks: rank 0's is taken)
  std::int64_t run_id = 0;
  std::string store_id;
  bool resume = false;
  std::filesystem::path checkpoint;          ///< rank 0 sends it when resuming; the others write what they receive here
  std::function<void(const std::string&)> phase;  ///< progress lines for the run's log (may be empty)
};

/// The job as this process joined it.
struct JoinedJob {
  TrainConfig config;        ///< rank 0's config, with this process's own device ("cuda" becomes one GPU per local process)
  std::int64_t run_id = 0;
  std::string store_id;
  bool resume = false;
};

/// Joins the process group. Before anyone waits in a collective, every rank says through the rendezvous store
/// whether it can take part (its device, the backend, the dataset's fingerprint), and rank 0 stops the job naming
/// the first that cannot: ranks that chose differently, or one that cannot join at all, would otherwise leave the
/// others waiting out the timeout. Throws ConfigError (this rank's problem) or Error (another's). `communicator`
/// (made from request.options) is the caller's: on rank 0 it hosts the rendezvous store, which must outlive a failed
/// join long enough for the others to read why.
JoinedJob join_training_job(Communicator& communicator, JobJoinRequest request);

/// Every rank takes rank 0's values of `tensors` (parameters and buffers, in the same order everywhere); a
/// rank whose tensors hold another number of elements (another vocabulary) is refused before any step.
void share_parameters(Communicator& communicator, std::vector<torch::Tensor> tensors);

/// Rank 0's batches on every rank (replicated clustering may round differently between processes).
void share_batches(Communicator& communicator, std::vector<std::vector<std::int64_t>>& batches);

/// The seed a rank other than 0 gives its generator before each step (splitmix64's mix of seed, rank and step).
/// Only rank 0's generator state is in the checkpoint, so the other ranks' draws (dropout) restart at every step
/// from what the step is: a resumed run draws what an uninterrupted one does.
std::uint64_t worker_step_seed(std::uint64_t seed, int rank, std::int64_t step);

}  // namespace xmc
