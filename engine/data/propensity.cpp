#include "engine/data/propensity.h"

#include <cmath>

namespace xmc {

std::vector<double> inverse_propensities(const std::vector<std::int64_t>& label_frequencies,
                                         std::int64_t num_train_points, PropensityParams params) {
  const double c = (std::log(static_cast<double>(num_train_points)) - 1.0) * std::pow(params.b + 1.0, params.a);
  std::vector<double> inv(label_frequencies.size());
  for (std::size_t l = 0; l < inv.size(); ++l)
    inv[l] = 1.0 + c * std::pow(static_cast<double>(label_frequencies[l]) + params.b, -params.a);
  return inv;
}

}  // namespace xmc
