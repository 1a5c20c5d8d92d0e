// The batch orders' factories, from XMC_FOR_EACH_BATCH_ORDER: each order's file defines make_NAME_batch_order.
#include "engine/config/component_info.h"
#include "engine/config/component_config.h"
#include "engine/registry/component_list.h"
#include "engine/sampler/batch_order.h"
#include "engine/sampler/query_batcher_options.h"

namespace xmc {

#define XMC_DECLARE_BATCH_ORDER_FACTORY(name) std::unique_ptr<BatchOrder> make_##name##_batch_order(const ComponentConfig&);
XMC_FOR_EACH_BATCH_ORDER(XMC_DECLARE_BATCH_ORDER_FACTORY)
#undef XMC_DECLARE_BATCH_ORDER_FACTORY

std::unique_ptr<BatchOrder> make_batch_order(const ComponentConfig& config) {
  using Factory = std::unique_ptr<BatchOrder> (*)(const ComponentConfig&);
  static const Factory factories[] = {
#define XMC_BATCH_ORDER_FACTORY(name) make_##name##_batch_order,
      XMC_FOR_EACH_BATCH_ORDER(XMC_BATCH_ORDER_FACTORY)
#undef XMC_BATCH_ORDER_FACTORY
  };
  // A method that draws its own batches (IRENE, xrlinear) has no batching keys: the queries' random order serves.
  const QueryBatcherOptions* batching = config.find<QueryBatcherOptions>();
  const std::string type = batching != nullptr ? batching->type : "random";
  const auto& orders = registered_batch_order_infos();  // the same list, in the same order
  for (std::size_t i = 0; i < orders.size(); ++i)
    if (orders[i].name == type) return factories[i](config);
  batch_order_info(type);  // throws ConfigError naming the known orders
  return nullptr;
}

}  // namespace xmc
