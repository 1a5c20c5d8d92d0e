#pragma once
// Training queries a run holds out of training, to choose something on rows it never trained on: UniDEC's concat
// weight (unidec.concat_holdout), xrlinear's settings (xrlinear.choose_holdout), and, for dexml and ngame
// (holdout.share), the weight of an xrlinear run fused with them (xrlinear.dense_run). Plain C++.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/config/option_group.h"

namespace xmc {

/// dexml's and ngame's option group "held-out queries".
struct HeldOutOptions {
  double share = 0;  ///< of the labelled training queries, never trained on (0 = none)
};
OptionGroup held_out_option_group();

/// The random streams the methods draw their held-out rows from (each its own, so a run's other draws stay as without them).
inline constexpr std::uint64_t kConcatHoldoutStream = 0x636f6e636174ULL;  // "concat": unidec.concat_holdout, holdout.share
inline constexpr std::uint64_t kChoiceHoldoutStream = 0x63686f6f7365ULL;  // "choose": xrlinear.choose_holdout

/// round(share × n) of `labelled_rows` (n of them), at least 1 and at most n − 1, drawn from `seed` ^ `stream` by a shuffle
/// of our own (std::shuffle differs between standard libraries): the same rows on every rank, platform and resume.
/// Ascending. None when share <= 0 or n < 2.
std::vector<std::int64_t> draw_held_out_rows(std::span<const std::int64_t> labelled_rows, double share, std::uint64_t seed, std::uint64_t stream);

}  // namespace xmc
