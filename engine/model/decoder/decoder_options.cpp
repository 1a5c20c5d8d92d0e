#include "engine/model/decoder/decoder_options.h"

#include <algorithm>
#include <filesystem>

#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/model/image_options.h"
#include "engine/model/transformer_options.h"

namespace xmc {

const std::vector<std::string>& lora_target_names() {
  static const std::vector<std::string> names{"q", "k", "v", "o", "gate", "up", "down"};
  return names;
}

std::vector<std::string> parse_lora_targets(const std::string& targets) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= targets.size()) {
    std::size_t end = targets.find(',', begin);
    if (end == std::string::npos) end = targets.size();
    std::string name = targets.substr(begin, end - begin);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    const auto& known = lora_target_names();
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw ConfigError("encoder.lora.targets: \"" + name + "\" is not a projection (q, k, v, o, gate, up, down; comma-separated)");
    if (std::find(out.begin(), out.end(), name) != out.end())
      throw ConfigError("encoder.lora.targets: \"" + name + "\" is listed twice");
    out.push_back(name);
    begin = end + 1;
  }
  return out;
}

EncoderInfo decoder_encoder_info() {
  OptionGroup decoder =
      OptionGroupBuilder<DecoderOptions>("Decoder encoder")
          .text("encoder.template", &DecoderOptions::prompt_template, {},
                "decoder: the prompt each text is put in ({text} marks where); EOS follows it")
          .fixed_on_resume()
          .path("encoder.tokenizer", &DecoderOptions::tokenizer, "decoder: tokenizer.json or its folder (default: encoder.path's)")
          .fixed_on_resume()
          .integer("encoder.lora.rank", &DecoderOptions::lora_rank, 0, 4096, "LoRA rank r of each adapter (0 = train every weight)")
          .fixed_on_resume()
          .number("encoder.lora.alpha", &DecoderOptions::lora_alpha, 1e-6, 1e6, "LoRA α: adapters scaled by α/√r (rsLoRA) or α/r")
          .fixed_on_resume()
          .text("encoder.lora.targets", &DecoderOptions::lora_targets, {},
                "projections given adapters, comma-separated, of q,k,v,o,gate,up,down")
          .fixed_on_resume()
          .text("encoder.lora.rslora", &DecoderOptions::lora_rslora, {"on", "off"}, "rank-stabilised scaling α/√r (on) or α/r (off)")
          .fixed_on_resume()
          .number("encoder.lora.dropout", &DecoderOptions::lora_dropout, 0, 0.9, "dropout on each adapter's input")
          .text("encoder.checkpointing", &DecoderOptions::checkpointing, {"off", "on"},
                "recompute each layer's activations in backward: memory grows with layers, not with their attention scores")
          .text("encoder.base_dtype", &DecoderOptions::base_dtype, {"fp32", "bf16"},
                "frozen base weights held in fp32 or bf16 (half the memory; with adapters only)")
          .fixed_on_resume()
          .validate([](const TrainConfig& config) {
            const DecoderOptions& options = config.get<DecoderOptions>();
            if (options.prompt_template.find("{text}") == std::string::npos)
              throw ConfigError("encoder.template: \"" + options.prompt_template + "\" has no {text} to put the text in");
            parse_lora_targets(options.lora_targets);
            std::error_code error;
            if (!options.tokenizer.empty() && !std::filesystem::exists(options.tokenizer, error))
              throw ConfigError("encoder.tokenizer: " + options.tokenizer.string() + ": no such file or folder");
            if (options.base_dtype == "bf16" && options.lora_rank == 0)
              throw ConfigError("encoder.base_dtype: bf16 holds frozen weights; with encoder.lora.rank 0 every weight is trained (in fp32)");
            if (options.checkpointing == "on" && options.lora_dropout > 0)
              throw ConfigError("encoder.checkpointing: on recomputes each layer in backward, which would draw other dropout masks "
                                "than the forward's; set encoder.lora.dropout to 0 (the ViXML recipe uses none)");
          })
          .build();
  return {"decoder", "a decoder-only LLM (Qwen2, Qwen3, Llama) from a local Hugging Face folder, with LoRA (byte-level BPE)",
          {transformer_option_group(), std::move(decoder), image_option_group()}};
}

}  // namespace xmc
