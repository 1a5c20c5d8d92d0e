#pragma once
// What the run config knows of a registered component without building it (no torch): its name, one line of
// help and its option groups. engine/registry/component_list.h registers each method and encoder once; the
// torch side finds the same names' factories there (method_factories.cpp, encoder_factories.cpp).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/config/option_group.h"

namespace xmc {

class RunStore;

class ComponentConfig;

/// A mark on the training plots at the start of an epoch (shortlists refreshed, a stage begins).
struct EpochMark {
  std::int64_t epoch = 0;
  std::string label;
};

/// Marks at epochs first, first + step, ... below `end` (none at 0, where the axis begins; none at all when
/// step <= 1 or there would be more than 20: then the lines hide the curves).
std::vector<EpochMark> periodic_marks(std::int64_t first, std::int64_t step, std::int64_t end, const std::string& label);

struct MethodInfo {
  std::string name;         ///< the config's `method` value
  std::string description;  ///< one line for help texts
  /// The method's own option groups: they matter only when this method (or another that lists the same
  /// group) is chosen.
  std::vector<OptionGroup> option_groups;
  // The hooks see what a component sees of its run (component_config.h): the run context and the options of the
  // run's components.
  /// Epochs trained after the `epochs` of the first stage (NGAME: its M4 epochs); null = none.
  std::function<std::int64_t(const ComponentConfig&)> later_stage_epochs;
  /// The marks the method adds to the training plots (its shortlist refreshes, its later stages); null = none.
  std::function<std::vector<EpochMark>(const ComponentConfig&)> milestones;
  /// For a method that builds on another run (IRENE on a finished run with classifiers): that run's id in
  /// `config`. Null for a method that trains its own encoder.
  std::function<std::int64_t(const ComponentConfig&)> base_run;
  /// The step loss is a sum of several heads' and directions' terms (UniDEC's DE and CLF): the plots label it with
  /// the method's name beside the loss's, and compare it only with the same method's.
  bool loss_sums_terms = false;
  /// For such a method: throws ConfigError naming the key when the base run (its config and status, read from
  /// the store) cannot serve `config`. Checked before the new run is recorded, so a mistake leaves no failed run.
  std::function<void(const ComponentConfig& config, const ComponentConfig& base_config, const std::string& base_status)> check_base_run;
  /// False for a method without an encoder trained by a loss (xrlinear): the encoder, loss and optimiser keys
  /// do not shape its runs, and its runs are not named after them.
  bool trains_encoder = true;
  /// Epochs of the first stage when the method fixes them (xrlinear's one pass over its rankers); null = `epochs`.
  std::function<std::int64_t(const ComponentConfig&)> first_stage_epochs;
  /// Throws ConfigError naming the key when `config` names another run of `store` that cannot serve it (xrlinear's
  /// dense run to fuse with). Checked before the new run is recorded, so a mistake leaves no failed run; null = none.
  std::function<void(const ComponentConfig& config, const RunStore& store)> check_runs_it_reads;
};

struct EncoderInfo {
  std::string name;         ///< the config's `encoder.type` value
  std::string description;  ///< one line for help texts
  std::vector<OptionGroup> option_groups;  ///< they matter only when this encoder is chosen
};

/// An order of an epoch's training queries (the config's `sampler.type`): random, NGAME's clusters.
struct BatchOrderInfo {
  std::string name;         ///< the config's `sampler.type` value
  std::string description;  ///< one line for help texts
  std::vector<OptionGroup> option_groups;  ///< they matter only when this order is chosen
  /// The marks it adds to the training plots (re-clustering); null = none.
  std::function<std::vector<EpochMark>(const ComponentConfig&)> milestones;
};

/// Every registered method, encoder and batch order, in the order help texts list them (engine/registry).
const std::vector<MethodInfo>& registered_method_infos();
const std::vector<EncoderInfo>& registered_encoder_infos();
const std::vector<BatchOrderInfo>& registered_batch_order_infos();
/// The registered batch order named `name`; throws ConfigError naming the known ones.
const BatchOrderInfo& batch_order_info(const std::string& name);
/// The config's `loss` values: the registered losses (engine/loss/loss_entry.h has their functions).
const std::vector<std::string>& registered_loss_names();
/// The registered method named `name`; throws ConfigError naming the known methods.
const MethodInfo& method_info(const std::string& name);
/// The same, or null when no method has that name (a form field being typed).
const MethodInfo* find_method_info(const std::string& name);

}  // namespace xmc
