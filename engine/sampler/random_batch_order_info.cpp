// The "random" batch order's registration (torch-free): a fresh shuffle of the training queries each epoch.
#include "engine/config/component_info.h"

namespace xmc {

BatchOrderInfo random_batch_order_info() {
  return {.name = "random", .description = "a fresh shuffle of the training queries every epoch"};
}

}  // namespace xmc
