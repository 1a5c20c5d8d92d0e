#include "engine/config/component_info.h"
#include "engine/core/error.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/encoder_options.h"
#include "engine/registry/component_list.h"

namespace xmc {

#define XMC_DECLARE_ENCODER_FACTORY(name) \
  BuiltEncoder make_##name##_encoder(const ComponentConfig&, const std::vector<std::string>&, const std::filesystem::path&);
XMC_FOR_EACH_ENCODER(XMC_DECLARE_ENCODER_FACTORY)

BuiltEncoder make_encoder(const ComponentConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir) {
  static const EncoderFactory factories[] = {
#define XMC_ENCODER_FACTORY(name) make_##name##_encoder,
      XMC_FOR_EACH_ENCODER(XMC_ENCODER_FACTORY)
#undef XMC_ENCODER_FACTORY
  };
  const std::string& type = config.get<EncoderOptions>().type;
  const auto& encoders = registered_encoder_infos();  // the same list, in the same order
  std::string known;
  for (std::size_t i = 0; i < encoders.size(); ++i) {
    if (encoders[i].name == type) return factories[i](config, train_texts, run_dir);
    known += (known.empty() ? "" : ", ") + encoders[i].name;
  }
  throw ConfigError("encoder.type: \"" + type + "\" is not a known encoder (" + known + ")");
}

}  // namespace xmc
