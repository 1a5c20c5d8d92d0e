#pragma once
// Engine-internal (includes torch). One training stage's optimiser step, made once per stage: AdamW over the
// method's parameter groups (lazy rows where a group asks, deferred rows for large CPU tables), the stage's
// learning-rate schedule and gradient clipping. The trainer calls step() after each backward.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/component_config.h"
#include "engine/optim/fused_adamw.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optim_options.h"
#include "engine/optim/parameter_group.h"

namespace xmc {

struct StageOptimizerSetup {
  OptimOptions options;
  double default_lr = 1e-3;       ///< AdamW's default options' rate (each group brings its own)
  std::int64_t total_steps = 1;   ///< the stage's steps: the schedule decays to zero there
  bool clip_gradients = true;     ///< the stage clips to options.grad_clip
  /// Large CPU tables may take deferred row updates (not across processes: a checkpoint brings the rows up to date
  /// on rank 0 alone, whose rounding would then part from the others').
  bool may_defer_rows = true;
  std::function<void(const std::string&)> phase;  ///< what it decided, for the run's log (may be empty)
};

class StageOptimizer {
 public:
  StageOptimizer(std::vector<ParameterGroup> groups, StageOptimizerSetup setup);

  /// Clips the gradients, sets each group's rate for the stage's `stage_step` (0-based) and takes AdamW's step;
  /// the gradients are dropped after it. Returns the first group's rate at that step.
  double step(std::int64_t stage_step);

  /// Every parameter the stage trains, in group order (what gradient exchange reduces).
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  FusedAdamW& adamw() { return *adamw_; }
  const LrSchedule& schedule() const { return schedule_; }

  /// Applies the deferred row updates: before anything reads the parameters outside a step.
  void bring_rows_up_to_date() { adamw_->bring_rows_up_to_date(); }
  /// Whether the deferred rows are brought up to date at run step `step` (every optim.deferred_sync_steps).
  bool syncs_rows_at(std::int64_t step) const;
  /// Whether any table takes deferred updates synced every optim.deferred_sync_steps steps.
  bool syncs_deferred_rows() const { return setup_.options.deferred_sync_steps > 0 && adamw_->defers_rows(); }

 private:
  StageOptimizerSetup setup_;
  std::unique_ptr<FusedAdamW> adamw_;
  std::vector<double> base_lrs_;
  std::vector<torch::Tensor> parameters_;
  LrSchedule schedule_;
};

/// A stage's optimiser for a run: `stage`'s options and default rate are set from the run's own (optim.* and lr;
/// optim.*'s defaults for a method without optimiser keys, which fits rather than steps).
std::unique_ptr<StageOptimizer> make_stage_optimizer(std::vector<ParameterGroup> groups, const ComponentConfig& run, StageOptimizerSetup stage);

}  // namespace xmc
