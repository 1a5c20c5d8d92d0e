#pragma once
// Engine-internal (includes torch). What a user is told when a run fails: the error without LibTorch's backtrace;
// out of memory with the step, the batch size and the device, and what to lower; in a job, what the other
// processes say about themselves.
#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "engine/config/train_config.h"

namespace xmc {

/// Throws Error when step `step`'s `loss` (during `task`: "epoch 2/5") is not finite, with what to lower.
void check_finite_loss(double loss, std::int64_t step, const std::string& task, const TrainConfig& config);

/// `describe_peers` (may be empty) says what the job's other processes report ("rank 1 was killed by signal 9").
std::string describe_training_failure(const std::exception& error, std::int64_t step, const TrainConfig& config,
                                      const std::function<std::string()>& describe_peers);

}  // namespace xmc
