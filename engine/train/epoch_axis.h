#pragma once
// Engine-internal (includes torch). The run's epoch axis, on which every plot and event places the run: it runs
// through the method's stages one after another, a stage's (fractional) epochs continuing the count of those
// before it.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/method/checkpoint.h"
#include "engine/method/training_stages.h"

namespace xmc {

class EpochAxis {
 public:
  EpochAxis() = default;  ///< no stages yet
  /// `stages` (the method's, kept by reference) of `method_name`, whose checkpoint is `checkpoint` (named in errors).
  EpochAxis(const std::vector<StageSpec>& stages, std::string method_name, std::filesystem::path checkpoint)
      : stages_(&stages), method_name_(std::move(method_name)), checkpoint_(std::move(checkpoint)) {}

  /// The epochs of the stages before stage `index`.
  double offset(std::size_t index) const;
  /// The index of the stage named `name` ("" = the first; kAllStagesDone = one past the last).
  std::size_t stage_index(const std::string& name) const;
  /// Where `state` is: its stage's offset, its epoch and the share of its epoch's batches done.
  double at(const TrainingState& state) const;
  /// Where `state` is once its current batch is done.
  double after_batch(const TrainingState& state) const;

 private:
  const std::vector<StageSpec>* stages_ = nullptr;
  std::string method_name_;
  std::filesystem::path checkpoint_;
};

}  // namespace xmc
