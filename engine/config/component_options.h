#pragma once
// The options of a run's components (method, encoder, sampler, loss, ...), each a plain struct declared
// beside its component, held by type. The run config does not know the types: a component reads its own
// with get<T>() (T's defaults when the config never set it) and a parser writes with edit<T>(). Copies share
// the structs until one side edits (copy on write), so passing a config around costs a few pointers.
#include <map>
#include <memory>
#include <typeindex>

namespace xmc {

class ComponentOptions {
 public:
  template <class Options>
  const Options& get() const {
    const auto it = groups_.find(std::type_index(typeid(Options)));
    if (it == groups_.end()) {
      static const Options defaults{};
      return defaults;
    }
    return *static_cast<const Options*>(it->second.get());
  }

  template <class Options>
  Options& edit() {
    std::shared_ptr<void>& slot = groups_[std::type_index(typeid(Options))];
    if (!slot) slot = std::make_shared<Options>();
    else if (slot.use_count() > 1) slot = std::make_shared<Options>(*static_cast<const Options*>(slot.get()));
    return *static_cast<Options*>(slot.get());
  }

 private:
  std::map<std::type_index, std::shared_ptr<void>> groups_;
};

}  // namespace xmc
