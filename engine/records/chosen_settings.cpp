#include "engine/records/chosen_settings.h"

#include <cstdio>
#include <cstring>

namespace xmc {

std::vector<ChosenSetting> chosen_settings(const std::vector<ScalarPoint>& scalars) {
  const std::size_t prefix = std::strlen(kChosenSettingPrefix);
  std::map<std::string, ChosenSetting> last;  // by key: scalars come in step order, the last choice wins
  for (const ScalarPoint& p : scalars) {
    if (p.key.size() <= prefix || p.key.compare(0, prefix, kChosenSettingPrefix) != 0) continue;
    std::string key = p.key.substr(prefix);
    last[key] = ChosenSetting{key, p.value, p.step};
  }
  std::vector<ChosenSetting> out;
  for (auto& [key, setting] : last) out.push_back(std::move(setting));
  return out;
}

std::string chosen_value_text(const ChosenSetting& chosen, const std::string& configured) {
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", chosen.value);
  return std::string(value) + " (chosen while training; configured " + (configured.empty() ? std::string("—") : configured) + ")";
}

void show_chosen_settings(std::map<std::string, std::string>& flat_config, const std::vector<ChosenSetting>& chosen) {
  for (const ChosenSetting& c : chosen) {
    const auto it = flat_config.find(c.key);
    flat_config[c.key] = chosen_value_text(c, it == flat_config.end() ? std::string() : it->second);
  }
}

}  // namespace xmc
