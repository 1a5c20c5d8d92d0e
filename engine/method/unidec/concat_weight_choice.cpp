#include "engine/method/unidec/concat_weight_choice.h"

#include "engine/core/error.h"

namespace xmc {

void ConcatWeightTally::add(const torch::Tensor& de, const torch::Tensor& clf, const torch::Tensor& label_bias, const torch::Tensor& positives) {
  if (de.dim() != 2 || de.sizes() != clf.sizes() || de.sizes() != positives.sizes())
    throw Error("concat weight choice: de, clf and positive scores differ in shape");
  if (label_bias.defined() && (label_bias.dim() != 1 || label_bias.size(0) != de.size(1)))
    throw Error("concat weight choice: the label bias has " + std::to_string(label_bias.numel()) + " entries for " +
                std::to_string(de.size(1)) + " labels");
  const std::int64_t n = de.size(0);
  const std::int64_t labels = de.size(1);
  if (n == 0 || labels == 0) return;
  torch::NoGradGuard no_grad;
  const std::int64_t depth = std::min<std::int64_t>(5, labels);
  const torch::Tensor truth = positives.to(torch::kBool);
  for (std::size_t i = 0; i < choice_.weights().size(); ++i) {
    const double w = choice_.weights()[i];
    torch::Tensor scores = (1 - w) * de + w * clf;
    if (label_bias.defined()) scores = scores + label_bias.to(scores.dtype()).unsqueeze(0);
    const torch::Tensor top = std::get<1>(scores.topk(depth, /*dim=*/1));
    const torch::Tensor hits = truth.gather(1, top).to(torch::kFloat64).cumsum(/*dim=*/1);  // [n x depth]
    for (const std::int64_t k : {1, 3, 5})
      if (k <= labels) choice_.add_score(i, hits.select(1, k - 1).sum().item<double>() / static_cast<double>(k));
  }
  choice_.add_queries(n);
}

}  // namespace xmc
