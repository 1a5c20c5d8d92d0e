#include "engine/eval/paired_gain.h"

#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace xmc {

PairedGain paired_gain(std::span<const double> candidate, std::span<const double> baseline) {
  if (candidate.size() != baseline.size() || candidate.empty())
    throw Error("paired_gain: " + std::to_string(candidate.size()) + " and " + std::to_string(baseline.size()) +
                " scores; a paired comparison needs the same non-empty set of items");
  const auto n = static_cast<double>(candidate.size());
  double sum = 0;
  for (std::size_t i = 0; i < candidate.size(); ++i) sum += candidate[i] - baseline[i];
  PairedGain gain;
  gain.mean = sum / n;
  if (candidate.size() < 2) return gain;
  double squares = 0;
  for (std::size_t i = 0; i < candidate.size(); ++i) {
    const double d = candidate[i] - baseline[i] - gain.mean;
    squares += d * d;
  }
  gain.standard_error = std::sqrt(squares / (n - 1)) / std::sqrt(n);
  return gain;
}

bool clearly_better(const PairedGain& gain, double margin) { return gain.mean > 0 && gain.mean > margin * gain.standard_error; }

}  // namespace xmc
