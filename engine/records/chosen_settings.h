#pragma once
// Config values a run chose for itself while it trained (UniDEC's concat weight picked on held-out training
// queries), kept beside the config the user gave rather than over it: the config stays what was asked for
// (resume checks and seed groups compare it), and every place that shows a run's config shows the value
// actually used next to the configured one. Stored as scalars named "chosen/<config key>" at the step the
// choice was made, so that a resume from an earlier checkpoint forgets it like any later scalar.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/records/run_records.h"

namespace xmc {

/// The scalar key prefix of a chosen setting: "chosen/unidec.concat_weight".
inline constexpr const char* kChosenSettingPrefix = "chosen/";

struct ChosenSetting {
  std::string key;        ///< the config key, dotted ("unidec.concat_weight")
  double value = 0;       ///< the value the run used
  std::int64_t step = 0;  ///< the optimiser step it was chosen at
};

/// The chosen settings among a run's scalars: the last value of each "chosen/..." key, sorted by key.
std::vector<ChosenSetting> chosen_settings(const std::vector<ScalarPoint>& scalars);

/// How a config key's value is shown when the run chose it: "1 (chosen while training; configured 0.5)".
std::string chosen_value_text(const ChosenSetting& chosen, const std::string& configured);

/// A flattened config (dotted key → shown value) with each chosen setting's value shown as chosen_value_text.
void show_chosen_settings(std::map<std::string, std::string>& flat_config, const std::vector<ChosenSetting>& chosen);

}  // namespace xmc
