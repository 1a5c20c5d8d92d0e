#pragma once
// Plain C++. Draws that give the same numbers for the same seed on every platform and standard library
// (std::uniform_int_distribution and std::shuffle do not): run orders, held-out splits and samples repeat
// exactly wherever a run is resumed or reproduced.
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace xmc {

/// Uniform integer in [0, n) from a 64-bit engine (the modulo bias is below 2^-40 for n < 2^24).
inline std::int64_t uniform_index(std::mt19937_64& rng, std::int64_t n) {
  return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
}

/// Fisher-Yates with uniform_index: the same permutation for the same stream on every platform.
inline void shuffle_rows(std::vector<std::int64_t>& v, std::mt19937_64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<std::size_t>(uniform_index(rng, static_cast<std::int64_t>(i)))]);
}

}  // namespace xmc
