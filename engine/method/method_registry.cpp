#include "engine/method/method_registry.h"

#include "engine/core/error.h"

namespace xmc {

const std::vector<MethodRegistration>& registered_methods() {
  static const std::vector<MethodRegistration> methods{
      {"dexml", "dual encoder with (decoupled) softmax over in-batch, hard or all-label negatives", make_dexml_method},
      {"ngame", "NGAME: M1 encoder on clustered batches, then M4 classifiers on the frozen encoder", make_ngame_method},
      {"unidec", "UniDEC: dual encoder and classifiers together on pick-some-labels batches; concat, de and clf inference",
       make_unidec_method},
      {"depsl", "DEPSL: UniDEC's dual encoder alone on pick-some-labels batches", make_depsl_method},
      {"irene", "IRENE: classifiers of novel labels synthesized from their text and their neighbours' classifiers, on a base run",
       make_irene_method},
  };
  return methods;
}

std::unique_ptr<Method> make_method(const TrainConfig& config) {
  std::string known;
  for (const auto& m : registered_methods()) {
    if (m.name == config.method) return m.make(config);
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw ConfigError("method: \"" + config.method + "\" is not a known method (" + known + ")");
}

}  // namespace xmc
