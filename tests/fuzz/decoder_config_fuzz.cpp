// A decoder's config.json (Qwen2, Qwen3, Llama keys), and model.safetensors.index.json of sharded weights.
// A config that parses must also write back to one that parses to the same architecture.
#include <cstdlib>

#include "engine/model/decoder/decoder_config.h"
#include "engine/model/safetensors_index.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    const xmc::DecoderConfig config = xmc::parse_decoder_config(text, "config.json");
    const xmc::DecoderConfig again = xmc::parse_decoder_config(xmc::decoder_config_to_json(config), "written config.json");
    if (again.hidden_size != config.hidden_size || again.num_kv_heads != config.num_kv_heads || again.head_dim != config.head_dim ||
        again.qkv_bias != config.qkv_bias || again.o_bias != config.o_bias || again.eos_token_id != config.eos_token_id)
      std::abort();
  });
  xmc::fuzz::expect_clean([&] { (void)xmc::parse_safetensors_index(text, "model.safetensors.index.json"); });
  return 0;
}
