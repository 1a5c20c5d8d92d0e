#include "engine/train/epoch_axis.h"

#include "engine/core/error.h"

namespace xmc {

double EpochAxis::offset(std::size_t index) const {
  std::int64_t before = 0;
  for (std::size_t i = 0; i < index; ++i) before += (*stages_)[i].epochs;
  return static_cast<double>(before);
}

std::size_t EpochAxis::stage_index(const std::string& name) const {
  if (name.empty()) return 0;
  if (name == kAllStagesDone) return stages_->size();
  for (std::size_t i = 0; i < stages_->size(); ++i)
    if ((*stages_)[i].name == name) return i;
  if (name == "m1") return 0;  // checkpoints written before stages were the method's: the encoder stage
  throw Error("checkpoint " + checkpoint_.string() + " is at stage \"" + name + "\", which method " + method_name_ + " does not have");
}

double EpochAxis::at(const TrainingState& state) const {
  const double in_epoch = state.epoch_batches.empty()
                              ? 0.0
                              : static_cast<double>(state.batch_in_epoch) / static_cast<double>(state.epoch_batches.size());
  return offset(stage_index(state.stage)) + static_cast<double>(state.epoch) + in_epoch;
}

double EpochAxis::after_batch(const TrainingState& state) const {
  return offset(stage_index(state.stage)) + static_cast<double>(state.epoch) +
         static_cast<double>(state.batch_in_epoch + 1) / static_cast<double>(state.epoch_batches.size());
}

}  // namespace xmc
