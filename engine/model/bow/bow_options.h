#pragma once
// The bag-of-words encoder's own options (plain data, no torch): `encoder.min_count`, `encoder.bag`,
// `encoder.block`, `encoder.init_std` (bow_options.cpp).
#include <cstdint>
#include <string>

namespace xmc {

struct EncoderInfo;

struct BowOptions {
  std::int64_t min_count = 1;         ///< words seen fewer times in training text are dropped
  std::string bag = "mean";           ///< TF-IDF weights summing to 1 (mean), with unit L2 norm (l2), or all alike (uniform)
  std::string block = "residual";     ///< after the bag: a residual block (identity at the start), relu (the script's), or none
  double init_std = 1.0;              ///< standard deviation of the word vectors at the start
};

/// The bow encoder's registration: name, help and option group.
EncoderInfo bow_encoder_info();

}  // namespace xmc
