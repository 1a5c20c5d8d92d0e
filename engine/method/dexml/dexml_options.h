#pragma once
// DEXML's own options (plain data, no torch): `dexml.head`.
#include <string>

namespace xmc {

struct OptionGroup;

struct DexmlOptions {
  /// The DE embedding: L2norm(Tanh(Linear(Φ))) (tanh_linear), or the encoder's output normalised (normalize: NGAME's, and
  /// the reference script's, which has no head).
  std::string head = "tanh_linear";
};

/// The "DEXML" option group: dexml.head.
OptionGroup dexml_option_group();

}  // namespace xmc
