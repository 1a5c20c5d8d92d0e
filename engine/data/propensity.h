#pragma once
// Inverse propensities of Jain et al. (2016), as pyxclib computes them:
//   1/p_l = 1 + C (N_l + B)^(-A),   C = (ln N - 1) (B + 1)^A
// with N the number of training points and N_l the training frequency of label l.
#include <cstdint>
#include <string>
#include <vector>

namespace xmc {

struct PropensityParams {
  double a = 0.55;  ///< A (Amazon: 0.6, Wikipedia: 0.5)
  double b = 1.5;   ///< B (Amazon: 2.6, Wikipedia: 0.4)
};

/// Throws ConfigError("<source>: ...") unless A is finite and >= 0 and B finite and > -1, where the
/// formula is defined (B = -1.5 or A = nan made every PSP@k silently 0).
void check_propensity_params(const PropensityParams& params, const std::string& source);

std::vector<double> inverse_propensities(const std::vector<std::int64_t>& label_frequencies,
                                         std::int64_t num_train_points, PropensityParams params = {});

}  // namespace xmc
