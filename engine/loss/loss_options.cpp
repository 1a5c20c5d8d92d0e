#include "engine/loss/loss_options.h"

#include "engine/config/option_group_builder.h"
#include "engine/core/error.h"

namespace xmc {

std::string non_finite_loss_advice(const TrainConfig& config) {
  // The losses that divide by a temperature are those its key applies to (its group's condition on `loss`).
  const ConfigKeyInfo* temperature = find_config_key("temperature");
  if (temperature == nullptr || !key_applies(*temperature, config)) return {};
  return " or raise temperature (" + std::to_string(config.get<LossOptions>().temperature) + ")";
}

OptionGroup loss_option_group(const std::vector<std::string>& names) {
  return OptionGroupBuilder<LossOptions>("Loss")
      .text("loss", &LossOptions::kind, names,
            "Loss over (query, label-pool) scores; decoupled_softmax drops other positives from each denominator")
      .when("loss=softmax|decoupled_softmax|softtopk|supcon")
      .number("temperature", &LossOptions::temperature, 1e-4, 100, "τ: scores are divided by it in softmax-family losses")
      .when("loss=triplet")
      .number("margin", &LossOptions::margin, 0, 4, "γ: margin of the triplet loss")
      .when("loss=triplet")
      .integer("hardest_k", &LossOptions::hardest_k, 1, std::numeric_limits<std::int64_t>::max(),
               "Triplet: number of hardest in-batch negatives per positive")
      .when("loss=softtopk")
      .number("topk_k", &LossOptions::topk_k, 1e-3, 1e6, "SoftTop-k: the k of the soft top-k threshold")
      .build();
}

}  // namespace xmc
