#pragma once
// NGAME's own options (plain data, no torch): `ngame.m4_epochs`, `ngame.fusion` (ngame_options.cpp).
#include <cstdint>

namespace xmc {

struct MethodInfo;

struct NgameOptions {
  std::int64_t m4_epochs = 3;   ///< epochs of classifier training with the encoder frozen (stage M4)
  double fusion = 0.5;          ///< fused score = w·classifier + (1-w)·embedding
};

/// NGAME's registration: name, help and option group.
MethodInfo ngame_method_info();

}  // namespace xmc
