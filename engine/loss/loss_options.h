#pragma once
// The losses' options (plain data, no torch): every loss in engine/loss is a pure function of
// (scores [B x P], positive_mask [B x P] bool) -> scalar, so every method can use every loss. The config keys
// of the "Loss" group (loss_options.cpp) are bound to these fields.
#include <cstdint>
#include <string>
#include <vector>

namespace xmc {

struct OptionGroup;
struct TrainConfig;

struct LossOptions {
  std::string kind = "decoupled_softmax";  ///< the config's `loss`: a registered loss (loss_entry.h)
  double temperature = 0.05;  ///< τ: scores are divided by it (softmax family, SupCon, SoftTop-k)
  double margin = 0.3;        ///< γ of the triplet loss
  std::int64_t hardest_k = 10;  ///< triplet-OHNM: the k hardest negatives per query
  bool softmax_weighted_violators = true;  ///< triplet-OHNM: weight violators by softmax of their violation
  double topk_k = 5;          ///< SoftTop-k: Σ_j σ(α(s_ij + t)) = k
  double topk_alpha = 1.0;    ///< SoftTop-k: sharpness α (applied after dividing by τ)
  double bce_positive_weight = 1.0;  ///< BCE: weight C on positive entries
};

/// What to change when a step's loss is not finite, after the learning rate: the temperature of the run's loss when
/// it divides by one (" or raise temperature (0.05)"), else "".
std::string non_finite_loss_advice(const TrainConfig& config);

/// loss (one of `names`: the registered losses), temperature, margin, hardest_k, topk_k.
OptionGroup loss_option_group(const std::vector<std::string>& names);

}  // namespace xmc
