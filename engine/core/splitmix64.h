#pragma once
// splitmix64 (Steele, Lea and Flood, 2014): a 64-bit state advanced by a fixed odd increment, each output a
// bijective mix of the state. Used where independent random numbers must come from a seed and an index without
// a generator's sequential state (dropout masks filled by many threads, per-rank per-step seeds).
#include <cstdint>

namespace xmc {

/// The increment splitmix64 adds to its state between outputs (2^64 / φ, odd).
inline constexpr std::uint64_t kSplitmix64Increment = 0x9E3779B97F4A7C15ULL;

/// splitmix64's output function: a bijective mix of 64 bits.
inline constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace xmc
