#pragma once
// The tests' smallest Qwen2-shaped decoder: 2 layers of width 16 (4 query heads, 2 key-value heads of 4), a
// vocabulary of 50 whose last id (49) is the end of a text.
#include <cstdint>

#include "engine/model/decoder/decoder_config.h"

namespace xmc::test {

inline DecoderConfig tiny_decoder_config(std::int64_t max_positions = 32) {
  DecoderConfig c;
  c.family = DecoderFamily::qwen2;
  c.vocab_size = 50;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 4;
  c.max_position_embeddings = max_positions;
  c.eos_token_id = 49;
  return c;
}

}  // namespace xmc::test
