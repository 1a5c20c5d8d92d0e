#pragma once
// The decoder encoder's own options (plain data, no torch): its prompt, its tokenizer file, LoRA adapters,
// activation checkpointing and the precision its frozen weights are held in (decoder_options.cpp). It shares
// `encoder.max_len`, `encoder.pooling` and `encoder.precision` with bert (engine/model/transformer_options.h).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

struct EncoderInfo;

struct DecoderOptions {
  /// The text each query and label is put in before tokenizing (the whole prompted string at once); the EOS
  /// id is appended after it.
  std::string prompt_template = "This product text: {text}";
  /// The tokenizer.json (or a folder holding it); empty = encoder.path's.
  std::filesystem::path tokenizer;
  std::int64_t lora_rank = 16;                           ///< 0 = no adapters: every weight is trained
  double lora_alpha = 32;                                ///< scaling α/√r (rsLoRA) or α/r
  std::string lora_targets = "q,k,v,o,gate,up,down";     ///< the projections given adapters
  std::string lora_rslora = "on";                        ///< on: α/√r (rank-stabilised); off: α/r
  double lora_dropout = 0.0;                             ///< on an adapter's input
  std::string checkpointing = "off";                     ///< on: each layer's activations recomputed in backward
  std::string base_dtype = "fp32";                       ///< frozen weights held as fp32 | bf16 (with adapters only)
};

/// The projections an adapter can target, in the order of a layer: q, k, v, o, gate, up, down.
const std::vector<std::string>& lora_target_names();
/// `targets` ("q,k,v") as a list; throws ConfigError naming encoder.lora.targets for an unknown or repeated name.
std::vector<std::string> parse_lora_targets(const std::string& targets);

/// The decoder encoder's registration: name, help and option groups.
EncoderInfo decoder_encoder_info();

}  // namespace xmc
