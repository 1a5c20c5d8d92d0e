#pragma once
// Engine-internal (includes torch). What a training process sets up for itself before it loads a run: its CPU
// threads, the memory budget of its temporaries, its device, and what an earlier process of the run left behind.
#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <string>

#include "engine/config/train_config.h"

namespace xmc {

/// Sets this process's CPU threads (config.threads, else the host's cores shared among its `local_ranks` processes)
/// and its temporaries' memory budget (announced through `phase`); on the main rank, removes the evaluation's
/// set-aside file that a process killed while it evaluated left in `run_dir` (the checkpoint has what it held).
/// Returns the device config.device names.
torch::Device set_up_training_process(const TrainConfig& config, int local_ranks, bool main_rank, const std::filesystem::path& run_dir,
                                      const std::function<void(const std::string&)>& phase);

}  // namespace xmc
