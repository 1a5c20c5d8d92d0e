#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/loss/losses.h"

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

torch::Tensor compute_loss(LossKind kind, const torch::Tensor& scores, const torch::Tensor& positive_mask,
                           const LossOptions& options) {
  switch (kind) {
    case LossKind::TripletOhnm: return triplet_ohnm_loss(scores, positive_mask, options);
    case LossKind::Softmax: return softmax_loss(scores, positive_mask, options);
    case LossKind::DecoupledSoftmax: return decoupled_softmax_loss(scores, positive_mask, options);
    case LossKind::SoftTopK: return soft_topk_loss(scores, positive_mask, options);
    case LossKind::SupCon: return supcon_loss(scores, positive_mask, options);
    case LossKind::Bce: return bce_loss(scores, positive_mask, options);
  }
  throw ConfigError("loss: invalid LossKind value " + std::to_string(static_cast<int>(kind)));
}

}  // namespace xmc
