#include "engine/method/method_registry.h"

#include "engine/config/component_info.h"
#include "engine/core/error.h"
#include "engine/registry/component_list.h"

namespace xmc {

#define XMC_DECLARE_METHOD_FACTORY(name) std::unique_ptr<Method> make_##name##_method(const ComponentConfig& config);
XMC_FOR_EACH_METHOD(XMC_DECLARE_METHOD_FACTORY)

const std::vector<MethodRegistration>& registered_methods() {
  static const std::vector<MethodRegistration> methods = [] {
    const std::vector<MethodFactory> factories{
#define XMC_METHOD_FACTORY(name) make_##name##_method,
        XMC_FOR_EACH_METHOD(XMC_METHOD_FACTORY)
#undef XMC_METHOD_FACTORY
    };
    std::vector<MethodRegistration> out;
    for (std::size_t i = 0; i < factories.size(); ++i) {
      const MethodInfo& info = registered_method_infos()[i];  // the same list, in the same order
      out.push_back({info.name, info.description, factories[i]});
    }
    return out;
  }();
  return methods;
}

std::unique_ptr<Method> make_method(const ComponentConfig& config) {
  std::string known;
  for (const auto& m : registered_methods()) {
    known += (known.empty() ? "" : ", ") + m.name;
    if (m.name != config.run.method) continue;
    std::unique_ptr<Method> method = m.make(config);
    if ((method->gradient_steps() == nullptr) == (method->stage_fitting() == nullptr))
      throw Error("method " + m.name + " must train its stages either by gradient steps or by fitting, and not both");
    return method;
  }
  throw ConfigError("method: \"" + config.run.method + "\" is not a known method (" + known + ")");
}

}  // namespace xmc
