#pragma once
// What the transformer encoders (bert, decoder) share, as one option group "Transformer encoder" that both
// list (plain data, no torch): `encoder.max_len`, `encoder.pooling`, `encoder.precision`
// (transformer_options.cpp).
#include <cstdint>
#include <string>

namespace xmc {

struct OptionGroup;

struct TransformerOptions {
  std::int64_t max_len = 32;          ///< tokens per text, markers (CLS/SEP, EOS) included
  std::string pooling = "mean";       ///< mean | cls (bert) | last (decoder)
  std::string precision = "fp32";     ///< forward under autocast: fp32 | bf16 | fp16 (weights and losses stay fp32)
};

/// The group; a pooling the chosen encoder has no use for (cls for a decoder, last for bert) is refused.
OptionGroup transformer_option_group();

}  // namespace xmc
