#pragma once
// Turning a row of (label, score) predictions into a ranking: by descending score, ties broken by the
// lower label index, with filtered labels removed before the cut at k.
#include <cstdint>
#include <span>
#include <vector>

namespace xmc {

/// Writes the best min(k, n) labels of the row into `ranked` (best first).
/// @param labels    predicted labels, size n (any order, unique)
/// @param scores    their scores, size n
/// @param excluded  labels never to rank (sorted ascending), e.g. reciprocal pairs of this row
void rank_top_k(std::span<const std::int32_t> labels, std::span<const float> scores, std::size_t k,
                std::span<const std::int32_t> excluded, std::vector<std::int32_t>& ranked);

}  // namespace xmc
