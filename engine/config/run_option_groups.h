#pragma once
// The option groups of the keys every run has (TrainConfig's own fields), in engine/config/train_config.cpp;
// engine/registry/option_groups.cpp places them among the components' groups.
#include <string>
#include <vector>

#include "engine/config/option_group.h"

namespace xmc {

/// name, dataset, method (one of `methods`), device, threads, prefetch, seed.
OptionGroup run_option_group(const std::vector<std::string>& methods);
OptionGroup distributed_option_group();
OptionGroup optimisation_option_group();
/// Evaluation, checkpoints and the t-SNE snapshots.
OptionGroup evaluation_option_group();

}  // namespace xmc
