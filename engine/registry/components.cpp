// The registered components' torch-free side: their names, help and option groups, and every option group
// of a run in the order --list-keys and the launch form show them.
#include <algorithm>
#include <map>

#include "engine/config/component_info.h"
#include "engine/config/run_option_groups.h"
#include "engine/optim/optim_options.h"
#include "engine/core/error.h"
#include "engine/loss/loss_options.h"
#include "engine/model/encoder_options.h"
#include "engine/registry/component_list.h"
#include "engine/registry/find_by_name.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/sampler/negatives_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/index/rag_options.h"

namespace xmc {

#define XMC_DECLARE_METHOD_INFO(name) MethodInfo name##_method_info();
#define XMC_DECLARE_ENCODER_INFO(name) EncoderInfo name##_encoder_info();
XMC_FOR_EACH_METHOD(XMC_DECLARE_METHOD_INFO)
XMC_FOR_EACH_ENCODER(XMC_DECLARE_ENCODER_INFO)
#define XMC_DECLARE_BATCH_ORDER_INFO(name) BatchOrderInfo name##_batch_order_info();
XMC_FOR_EACH_BATCH_ORDER(XMC_DECLARE_BATCH_ORDER_INFO)
#define XMC_DECLARE_NEGATIVES_KIND(name) NegativesKind name##_negatives_kind();
XMC_FOR_EACH_NEGATIVES(XMC_DECLARE_NEGATIVES_KIND)

namespace {

/// A component's groups matter only when it is chosen: `selector` = its name, or the name of any other
/// component listing a group of the same name (PSL's by UniDEC and DEPSL).
void add_component_groups(std::vector<OptionGroup>& out, const std::string& selector, const std::string& name,
                          const std::vector<OptionGroup>& groups) {
  for (const OptionGroup& group : groups) {
    auto same = std::find_if(out.begin(), out.end(), [&](const OptionGroup& g) { return g.name == group.name; });
    if (same == out.end()) {
      out.push_back(group);
      out.back().applies_when = both_conditions(selector + "=" + name, group.applies_when);
    } else {
      // The condition starts with "<selector>=a|b": one more name.
      const auto end = same->applies_when.find(';');
      same->applies_when.insert(end == std::string::npos ? same->applies_when.size() : end, "|" + name);
    }
  }
}

}  // namespace

const std::vector<std::string>& registered_loss_names() {
#define XMC_LOSS_NAME(name) #name,
  static const std::vector<std::string> names{XMC_FOR_EACH_LOSS(XMC_LOSS_NAME)};
#undef XMC_LOSS_NAME
  return names;
}

const std::vector<MethodInfo>& registered_method_infos() {
#define XMC_METHOD_INFO(name) name##_method_info(),
  static const std::vector<MethodInfo> methods{XMC_FOR_EACH_METHOD(XMC_METHOD_INFO)};
#undef XMC_METHOD_INFO
  return methods;
}

const std::vector<EncoderInfo>& registered_encoder_infos() {
#define XMC_ENCODER_INFO(name) name##_encoder_info(),
  static const std::vector<EncoderInfo> encoders{XMC_FOR_EACH_ENCODER(XMC_ENCODER_INFO)};
#undef XMC_ENCODER_INFO
  return encoders;
}

const std::vector<BatchOrderInfo>& registered_batch_order_infos() {
#define XMC_BATCH_ORDER_INFO(name) name##_batch_order_info(),
  static const std::vector<BatchOrderInfo> orders{XMC_FOR_EACH_BATCH_ORDER(XMC_BATCH_ORDER_INFO)};
#undef XMC_BATCH_ORDER_INFO
  return orders;
}

const std::vector<NegativesKind>& registered_negatives_kinds() {
#define XMC_NEGATIVES_KIND(name) name##_negatives_kind(),
  static const std::vector<NegativesKind> kinds{XMC_FOR_EACH_NEGATIVES(XMC_NEGATIVES_KIND)};
#undef XMC_NEGATIVES_KIND
  return kinds;
}

const NegativesKind& negatives_kind(const std::string& name) {
  return find_by_name(registered_negatives_kinds(), name,
                      [&](const std::string& known) { return "negatives: \"" + name + "\" is not a known kind of negatives (" + known + ")"; });
}

const BatchOrderInfo& batch_order_info(const std::string& name) {
  return find_by_name(registered_batch_order_infos(), name,
                      [&](const std::string& known) { return "sampler.type: \"" + name + "\" is not a known batch order (" + known + ")"; });
}

const MethodInfo& method_info(const std::string& name) {
  return find_by_name(registered_method_infos(), name,
                      [&](const std::string& known) { return "method: \"" + name + "\" is not a known method (" + known + ")"; });
}

const MethodInfo* find_method_info(const std::string& name) {
  const auto& methods = registered_method_infos();
  const auto it = std::find_if(methods.begin(), methods.end(), [&](const MethodInfo& m) { return m.name == name; });
  return it == methods.end() ? nullptr : &*it;
}

const std::vector<OptionGroup>& registered_option_groups() {
  static const std::vector<OptionGroup> groups = [] {
    std::vector<std::string> methods, encoders, orders;
    for (const MethodInfo& m : registered_method_infos()) methods.push_back(m.name);
    for (const EncoderInfo& e : registered_encoder_infos()) encoders.push_back(e.name);
    for (const BatchOrderInfo& o : registered_batch_order_infos()) orders.push_back(o.name);

    std::vector<OptionGroup> out{run_option_group(methods), distributed_option_group(), loss_option_group(registered_loss_names()), negatives_option_group(registered_negatives_kinds()),
                                 encoder_option_group(encoders)};
    for (const EncoderInfo& e : registered_encoder_infos()) add_component_groups(out, "encoder.type", e.name, e.option_groups);
    out.push_back(query_batcher_option_group(orders));
    for (const BatchOrderInfo& o : registered_batch_order_infos()) add_component_groups(out, "sampler.type", o.name, o.option_groups);
    out.push_back(optimisation_option_group());
    out.push_back(optim_option_group());
    for (const MethodInfo& m : registered_method_infos()) add_component_groups(out, "method", m.name, m.option_groups);
    out.push_back(evaluation_option_group());
    out.push_back(rag_option_group());
    // Each key carries its group's name and condition, so that a key read alone says when it matters.
    for (OptionGroup& group : out)
      for (OptionKey& key : group.keys) {
        key.info.group = group.name;
        key.info.applies_when = both_conditions(group.applies_when, key.info.applies_when);
      }
    return out;
  }();
  return groups;
}

}  // namespace xmc
