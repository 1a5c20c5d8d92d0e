#include "engine/loss/loss_options.h"

#include "engine/config/option_group_builder.h"
#include "engine/core/error.h"

namespace xmc {
namespace {

struct NamedLoss {
  std::string_view name;
  LossKind kind;
};

constexpr NamedLoss kLossNames[] = {
    {"triplet", LossKind::TripletOhnm},
    {"softmax", LossKind::Softmax},
    {"decoupled_softmax", LossKind::DecoupledSoftmax},
    {"softtopk", LossKind::SoftTopK},
    {"supcon", LossKind::SupCon},
    {"bce", LossKind::Bce},
};

}  // namespace

std::vector<std::string> loss_names() {
  std::vector<std::string> names;
  for (const auto& entry : kLossNames) names.emplace_back(entry.name);
  return names;
}

LossKind parse_loss_kind(std::string_view name) {
  for (const auto& entry : kLossNames) {
    if (entry.name == name) return entry.kind;
  }
  std::string valid;
  for (const auto& entry : kLossNames) {
    if (!valid.empty()) valid += ", ";
    valid += entry.name;
  }
  throw ConfigError("loss: unknown loss '" + std::string(name) + "'; valid names: " + valid);
}

std::string to_string(LossKind kind) {
  for (const auto& entry : kLossNames) {
    if (entry.kind == kind) return std::string(entry.name);
  }
  throw ConfigError("loss: invalid LossKind value " + std::to_string(static_cast<int>(kind)));
}

OptionGroup loss_option_group() {
  return OptionGroupBuilder<LossOptions>("Loss")
      .text("loss", &LossOptions::kind, loss_names(),
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
