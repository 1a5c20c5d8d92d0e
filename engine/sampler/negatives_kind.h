#pragma once
// Plain C++. A kind of negatives (the config's `negatives`): what a training step scores besides each query's
// positives. Registered like a loss (engine/registry/component_list.h); the methods read a kind's traits, never
// its name.
#include <string>
#include <vector>

namespace xmc {

struct NegativesKind {
  std::string name;         ///< the config's `negatives` value
  std::string description;  ///< one line for help texts
  /// Each query's negatives also come from its shortlist of nearest labels, searched from hard.start_epoch on and
  /// again every hard.refresh_every epochs (the keys hard.*, and UniDEC's psl.*).
  bool draws_from_shortlists = false;
  /// Every label is scored at each step, chunk by chunk with cached gradients (the keys all.*): the label pool is
  /// the whole label set, and no pool of label texts is encoded per step.
  bool scores_every_label = false;
};

/// Every registered kind, in the order help texts list them (engine/registry/components.cpp).
const std::vector<NegativesKind>& registered_negatives_kinds();
/// The kind `name` names; ConfigError naming the known ones otherwise.
const NegativesKind& negatives_kind(const std::string& name);

}  // namespace xmc
