#pragma once
// Is one system clearly better than another on the same items (queries, labels)? The mean of the paired
// per-item differences and its standard error; "clearly" = ahead by a given number of standard errors.
// Used to keep a trained model over a baseline only when the gain on a small selection set is not noise.
#include <span>

namespace xmc {

struct PairedGain {
  double mean = 0;            ///< mean of candidate[i] - baseline[i]
  double standard_error = 0;  ///< sample standard deviation of the differences / sqrt(n) (0 for n < 2)
};

/// Throws Error when the two spans differ in length or are empty.
PairedGain paired_gain(std::span<const double> candidate, std::span<const double> baseline);

/// True when the gain is positive and larger than `margin` standard errors.
bool clearly_better(const PairedGain& gain, double margin);

}  // namespace xmc
