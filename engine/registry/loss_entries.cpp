// The registered losses, from XMC_FOR_EACH_LOSS: each loss's file defines NAME_loss_entry().
#include "engine/core/error.h"
#include "engine/loss/loss_entry.h"
#include "engine/registry/component_list.h"
#include "engine/registry/find_by_name.h"

namespace xmc {

#define XMC_DECLARE_LOSS_ENTRY(name) LossEntry name##_loss_entry();
XMC_FOR_EACH_LOSS(XMC_DECLARE_LOSS_ENTRY)
#undef XMC_DECLARE_LOSS_ENTRY

const std::vector<LossEntry>& registered_losses() {
#define XMC_LOSS_ENTRY(name) name##_loss_entry(),
  static const std::vector<LossEntry> losses{XMC_FOR_EACH_LOSS(XMC_LOSS_ENTRY)};
#undef XMC_LOSS_ENTRY
  return losses;
}

const LossEntry& loss_entry(const std::string& name) {
  return find_by_name(registered_losses(), name,
                      [&](const std::string& valid) { return "loss: unknown loss '" + name + "'; valid names: " + valid; });
}

}  // namespace xmc
