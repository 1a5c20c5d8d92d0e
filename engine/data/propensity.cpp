#include "engine/data/propensity.h"

#include <cmath>

#include "engine/core/error.h"

namespace xmc {

void check_propensity_params(const PropensityParams& params, const std::string& source) {
  if (!std::isfinite(params.a) || params.a < 0)
    throw ConfigError(source + ": propensity A must be a finite number >= 0, got " + std::to_string(params.a));
  if (!std::isfinite(params.b) || params.b <= -1)
    throw ConfigError(source + ": propensity B must be a finite number > -1, got " + std::to_string(params.b));
}

std::vector<double> inverse_propensities(const std::vector<std::int64_t>& label_frequencies,
                                         std::int64_t num_train_points, PropensityParams params) {
  const double c = (std::log(static_cast<double>(num_train_points)) - 1.0) * std::pow(params.b + 1.0, params.a);
  std::vector<double> inv(label_frequencies.size());
  for (std::size_t l = 0; l < inv.size(); ++l)
    inv[l] = 1.0 + c * std::pow(static_cast<double>(label_frequencies[l]) + params.b, -params.a);
  return inv;
}

}  // namespace xmc
