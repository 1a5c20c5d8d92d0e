#include "engine/optim/stage_optimizer.h"

#include "engine/optim/gradient_clipping.h"

namespace xmc {

StageOptimizer::StageOptimizer(std::vector<ParameterGroup> groups, StageOptimizerSetup setup) : setup_(std::move(setup)) {
  const OptimOptions& options = setup_.options;
  schedule_ = {.total_steps = setup_.total_steps,
               .warmup_steps = static_cast<std::int64_t>(options.warmup * static_cast<double>(setup_.total_steps)),
               .kind = options.schedule};
  std::vector<torch::optim::OptimizerParamGroup> adamw_groups;
  std::vector<torch::Tensor> lazy, deferred;
  for (ParameterGroup& group : groups) {
    if (group.parameters.empty()) continue;  // e.g. no DE head: no head group
    parameters_.insert(parameters_.end(), group.parameters.begin(), group.parameters.end());
    if (group.lazy_rows) lazy.insert(lazy.end(), group.parameters.begin(), group.parameters.end());
    else
      for (const torch::Tensor& p : group.parameters)
        // Not on a GPU: the deferred update is a CPU loop (a GPU updates the whole table).
        if (options.deferred_rows_from > 0 && setup_.may_defer_rows && p.is_cpu() && p.dim() >= 2 && p.size(0) >= options.deferred_rows_from)
          deferred.push_back(p);
    adamw_groups.emplace_back(std::move(group.parameters),
                              std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(group.lr).weight_decay(group.weight_decay)));
    base_lrs_.push_back(group.lr);
  }
  adamw_ = std::make_unique<FusedAdamW>(std::move(adamw_groups), torch::optim::AdamWOptions(setup_.default_lr));
  for (const auto& p : lazy) adamw_->update_rows_lazily(p);
  std::string tables;
  for (const auto& p : deferred) {
    adamw_->defer_untouched_rows(p, {.second_moment_per_row = options.table_second_moment == "row",
                                     .bfloat16_first_moment = options.table_first_moment == "bfloat16"});
    tables += (tables.empty() ? "" : ", ") + std::to_string(p.size(0)) + " x " + std::to_string(p.numel() / std::max<std::int64_t>(1, p.size(0)));
  }
  if (!deferred.empty() && setup_.phase)
    setup_.phase("AdamW defers the untouched rows of " + std::to_string(deferred.size()) + (deferred.size() == 1 ? " table" : " tables") + " (" +
                 tables + "; optim.deferred_rows_from " + std::to_string(options.deferred_rows_from) + "), with a second moment per " +
                 options.table_second_moment + " and a " + options.table_first_moment + " first moment");
}

double StageOptimizer::step(std::int64_t stage_step) {
  if (setup_.clip_gradients && setup_.options.grad_clip > 0) clip_gradient_norm(parameters_, setup_.options.grad_clip);
  const double factor = schedule_.factor(stage_step);
  for (std::size_t g = 0; g < adamw_->param_groups().size(); ++g)
    static_cast<torch::optim::AdamWOptions&>(adamw_->param_groups()[g].options()).lr(base_lrs_[g] * factor);
  // Gradients are dropped after each step rather than zeroed: the next backward then hands its freshly computed
  // buffers to the parameters instead of adding them into zeroed ones (for an embedding table, two passes over
  // the table saved). A parameter the step did not reach gets zeros, so the optimiser still decays it exactly as
  // after zero_grad().
  for (const auto& p : parameters_)
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  adamw_->step();
  for (const auto& p : parameters_) p.mutable_grad().reset();
  return base_lrs_.empty() ? 0 : base_lrs_[0] * factor;
}

bool StageOptimizer::syncs_rows_at(std::int64_t step) const {
  return syncs_deferred_rows() && step > 0 && step % setup_.options.deferred_sync_steps == 0;
}

std::unique_ptr<StageOptimizer> make_stage_optimizer(std::vector<ParameterGroup> groups, const ComponentConfig& run, StageOptimizerSetup stage) {
  const OptimOptions* options = run.find<OptimOptions>();
  stage.options = options != nullptr ? *options : OptimOptions{};
  stage.default_lr = run.run.lr;
  return std::make_unique<StageOptimizer>(std::move(groups), std::move(stage));
}

}  // namespace xmc
