#pragma once
// Engine-internal (includes torch). Choosing UniDEC's concat weight w on training queries held out of
// training: concat ranks labels by (1-w)·de + w·clf + b_l (b_l a learned label bias, added once), so each w
// of a grid is scored on the held-out queries by its mean P@1 + P@3 + P@5, and the best one is kept. w = 1 is
// the clf mode itself; w = 0 is the de mode (plus the bias, when there is one). Queries arrive in chunks so
// that the [queries x labels] score matrices stay small.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/eval/held_out_weight_choice.h"

namespace xmc {

class ConcatWeightTally {
 public:
  /// @param weights  the grid of w tried, each in [0, 1]
  explicit ConcatWeightTally(std::vector<double> weights) : choice_(std::move(weights)) {}

  /// Adds a chunk of queries: `de` and `clf` [n x L] scores (clf without the bias), `label_bias` [L] or
  /// undefined, `positives` [n x L] bool (every query has at least one positive).
  void add(const torch::Tensor& de, const torch::Tensor& clf, const torch::Tensor& label_bias, const torch::Tensor& positives);

  std::int64_t queries() const { return choice_.queries(); }
  /// Mean P@1 + P@3 + P@5 over the queries added so far, per weight (P@k for k ≤ L only).
  std::vector<double> scores() const { return choice_.scores(); }
  /// The weight with the highest score; of equal scores, the one nearest `preferred`.
  double best(double preferred) const { return choice_.best(preferred); }
  /// The whole curve for the run's log (HeldOutWeightChoice::curve).
  std::string curve(int decimals) const { return choice_.curve(decimals); }

 private:
  HeldOutWeightChoice choice_;
};

}  // namespace xmc
