#pragma once
// Engine-internal (includes torch). Methods by name, as FAISS's index_factory makes indexes from strings:
// make_method(config) builds the method `config.run.method` names. The methods are listed once, in
// engine/registry/component_list.h; each defines `make_NAME_method` in its own folder.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/method/method.h"

namespace xmc {

using MethodFactory = std::function<std::unique_ptr<Method>(const ComponentConfig& config)>;

struct MethodRegistration {
  std::string name;         ///< the config's `method` value
  std::string description;  ///< one line for help texts
  MethodFactory make;
};

/// Every registered method, in the order help texts list them.
const std::vector<MethodRegistration>& registered_methods();

/// The method `config.run.method` names, built for `config`. Throws ConfigError naming the known methods
/// for an unknown name.
std::unique_ptr<Method> make_method(const ComponentConfig& config);

}  // namespace xmc
