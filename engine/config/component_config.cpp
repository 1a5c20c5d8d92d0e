#include "engine/config/component_config.h"

#include <cxxabi.h>

#include <cstdlib>

#include "engine/config/option_group.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"

namespace xmc {

void ComponentConfig::refuse(const char* options_type) const {
  int status = 0;
  char* readable = abi::__cxa_demangle(options_type, nullptr, nullptr, &status);
  const std::string name = status == 0 && readable != nullptr ? readable : options_type;
  std::free(readable);
  throw Error(std::string("internal: a component of this ") + run.method + " run read the options " + name +
              " of a component that is not part of it (their keys do not apply to the run)");
}

ComponentConfig component_config(const TrainConfig& config) {
  RunContext run{.method = config.method,
                 .dataset = config.dataset,
                 .device = config.device,
                 .threads = config.threads,
                 .memory_mb = config.memory_mb,
                 .seed = config.seed,
                 .epochs = config.epochs,
                 .batch_size = config.batch_size,
                 .lr = config.lr,
                 .head_lr_scale = config.head_lr_scale,
                 .weight_decay = config.weight_decay};
  std::set<std::type_index> part_of_run;
  for (const OptionGroup& group : registered_option_groups()) {
    if (group.options_type == std::type_index(typeid(void))) continue;  // the run's own keys: in the context
    for (const OptionKey& key : group.keys)
      if (key_applies(key.info, config)) {
        part_of_run.insert(group.options_type);
        break;
      }
  }
  return ComponentConfig(std::move(run), config.components, std::move(part_of_run));
}

}  // namespace xmc
