#pragma once
// Engine-internal (includes torch). Methods by name, as FAISS's index_factory makes indexes from strings:
// make_method(config) builds the method `config.method` names. Adding a method is one file defining its
// factory plus one line in method_registry.cpp.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/method/method.h"

namespace xmc {

using MethodFactory = std::function<std::unique_ptr<Method>(const TrainConfig& config)>;

struct MethodRegistration {
  std::string name;         ///< the config's `method` value
  std::string description;  ///< one line for help texts
  MethodFactory make;
};

/// Every registered method, in the order help texts list them.
const std::vector<MethodRegistration>& registered_methods();

/// The method `config.method` names, built for `config`. Throws ConfigError naming the known methods
/// for an unknown name.
std::unique_ptr<Method> make_method(const TrainConfig& config);

// The factories, each defined in its method's file.
std::unique_ptr<Method> make_dexml_method(const TrainConfig& config);
std::unique_ptr<Method> make_ngame_method(const TrainConfig& config);
std::unique_ptr<Method> make_unidec_method(const TrainConfig& config);  // and DEPSL: unidec_method.cpp
std::unique_ptr<Method> make_depsl_method(const TrainConfig& config);
std::unique_ptr<Method> make_irene_method(const TrainConfig& config);

}  // namespace xmc
