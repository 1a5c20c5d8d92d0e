#include "engine/train/training_failure.h"

#include <torch/torch.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/loss/loss_options.h"

namespace xmc {

void check_finite_loss(double loss, std::int64_t step, const std::string& task, const TrainConfig& config) {
  if (std::isfinite(loss)) return;
  throw Error("step " + std::to_string(step) + " (" + task + "): the loss is " + std::to_string(loss) + "; lower lr (" + std::to_string(config.lr) + ")" +
              non_finite_loss_advice(config));
}

std::string describe_training_failure(const std::exception& error, std::int64_t step, const TrainConfig& config,
                                      const std::function<std::string()>& describe_peers) {
  std::string message = error.what();
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) message = torch_error->what_without_backtrace();
  if (std::string(error.what()).find("out of memory") != std::string::npos)
    message = "out of memory at step " + std::to_string(step) + " with batch_size " + std::to_string(config.batch_size) + " on " + config.device +
              "; lower batch_size, encoder.max_len or all.label_chunk";
  if (describe_peers && message.find("distributed training") != std::string::npos) {
    const std::string peers = describe_peers();
    if (!peers.empty()) message += " [" + peers + "]";
  }
  return message;
}

}  // namespace xmc
