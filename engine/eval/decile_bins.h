#pragma once
// Decile-wise analysis (head vs tail labels): labels sorted by descending train frequency (ties: lower
// index first) are cut greedily into 10 bins that each hold about a tenth of all train positives.
// Bin 0 is the head. A label never seen in training lands in the last bin.
#include <cstdint>
#include <vector>

namespace xmc {

inline constexpr int kNumDeciles = 10;

/// Bin (0..9) of every label.
std::vector<std::int8_t> decile_bins(const std::vector<std::int64_t>& label_frequencies);

}  // namespace xmc
