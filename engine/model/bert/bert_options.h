#pragma once
// The BERT-family encoder's own options (plain data, no torch): `encoder.max_len`, `encoder.pooling`,
// `encoder.precision` (bert_options.cpp).
#include <cstdint>
#include <string>

namespace xmc {

struct EncoderInfo;

struct BertOptions {
  std::int64_t max_len = 32;          ///< tokens per text
  std::string pooling = "mean";       ///< mean | cls
  std::string precision = "fp32";     ///< forward under autocast: fp32 | bf16 | fp16 (weights and losses stay fp32)
};

/// The bert encoder's registration: name, help and option group.
EncoderInfo bert_encoder_info();

}  // namespace xmc
