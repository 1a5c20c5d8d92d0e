#pragma once
// Engine-internal (includes torch). A checkpoint holds everything needed to continue a run bit-for-bit
// on CPU: model, optimiser, sampler RNG and clusters, the epoch's batch order and position, the stale
// embeddings of the last pass, the hard-negative shortlist and torch's RNG. Written to a temporary file
// and renamed, so a crash never leaves a half-written checkpoint in place of a good one.
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

struct TrainingState {
  std::string phase = "m1";        ///< m1 (encoder training), m4 (NGAME classifiers), done
  std::int64_t epoch = 0;          ///< epoch within the phase
  std::int64_t batch_in_epoch = 0; ///< batches of `epoch` already done (0 = at the epoch's start)
  std::int64_t step = 0;           ///< optimiser steps so far (over all phases)
  std::vector<std::vector<std::int64_t>> epoch_batches;  ///< the current epoch's batches (when mid-epoch)
  std::string sampler_state;       ///< QueryBatcher::save_state()
  torch::Tensor last_embeddings;   ///< [num_train x d] embeddings from the last pass (may be undefined)
  torch::Tensor shortlist;         ///< [num_train x S] hard-negative shortlist (may be undefined)
  std::int64_t shortlist_epoch = -1;
  bool has_classifiers = false;    ///< the model holds NGAME classifier residuals
};

void save_checkpoint(const std::filesystem::path& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const TrainingState& state);

/// Reads only the training state (to know how to shape the model before loading its parameters).
TrainingState read_checkpoint_state(const std::filesystem::path& path);

/// Loads parameters into `model` (shaped as the checkpoint's) and, when given, the optimiser state;
/// restores torch's CPU RNG. Errors name the file.
TrainingState load_checkpoint(const std::filesystem::path& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer);

}  // namespace xmc
