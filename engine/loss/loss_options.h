#pragma once
// Engine-internal (includes torch). Options shared by the losses in engine/loss: every loss is a pure
// function of (scores [B x P], positive_mask [B x P] bool) -> scalar, so every method can use every loss.
#include <cstdint>

namespace xmc {

struct LossOptions {
  double temperature = 0.05;  ///< τ: scores are divided by it (softmax family, SupCon, SoftTop-k)
  double margin = 0.3;        ///< γ of the triplet loss
  std::int64_t hardest_k = 10;  ///< triplet-OHNM: the k hardest negatives per query
  bool softmax_weighted_violators = true;  ///< triplet-OHNM: weight violators by softmax of their violation
  double topk_k = 5;          ///< SoftTop-k: Σ_j σ(α(s_ij + t)) = k
  double topk_alpha = 1.0;    ///< SoftTop-k: sharpness α (applied after dividing by τ)
  double bce_positive_weight = 1.0;  ///< BCE: weight C on positive entries
};

}  // namespace xmc
