#pragma once
// The mean and the sample standard deviation of a few values (a seed group's runs at one epoch or step, or their
// final metrics): what the seed bands and the group summary show.
#include <cmath>
#include <cstddef>
#include <vector>

namespace xmc::gui {

struct MeanAndSd {
  double mean = std::nan("");  ///< NaN without values
  double sd = std::nan("");    ///< sample sd (n − 1); NaN below two values
};

inline MeanAndSd mean_and_sd(const std::vector<double>& values) {
  MeanAndSd out;
  const std::size_t n = values.size();
  if (n == 0) return out;
  double sum = 0;
  for (const double v : values) sum += v;
  out.mean = sum / static_cast<double>(n);
  if (n < 2) return out;
  double squares = 0;
  for (const double v : values) squares += (v - out.mean) * (v - out.mean);
  out.sd = std::sqrt(squares / static_cast<double>(n - 1));
  return out;
}

}  // namespace xmc::gui
