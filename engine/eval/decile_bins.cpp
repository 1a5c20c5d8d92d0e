#include "engine/eval/decile_bins.h"

#include <algorithm>
#include <numeric>

namespace xmc {

std::vector<std::int8_t> decile_bins(const std::vector<std::int64_t>& label_frequencies) {
  const std::size_t n = label_frequencies.size();
  std::vector<std::int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t a, std::int32_t b) { return label_frequencies[static_cast<std::size_t>(a)] > label_frequencies[static_cast<std::size_t>(b)]; });
  const double total = static_cast<double>(std::accumulate(label_frequencies.begin(), label_frequencies.end(), std::int64_t{0}));
  std::vector<std::int8_t> bins(n, kNumDeciles - 1);
  double before = 0;  // train positives of all labels ranked ahead of this one
  for (std::int32_t label : order) {
    // A label starts in the bin its first positive falls in: positives [before, before + f).
    const int bin = total > 0 ? static_cast<int>(before * kNumDeciles / total) : kNumDeciles - 1;
    bins[static_cast<std::size_t>(label)] = static_cast<std::int8_t>(std::min(bin, kNumDeciles - 1));
    before += static_cast<double>(label_frequencies[static_cast<std::size_t>(label)]);
  }
  return bins;
}

}  // namespace xmc
