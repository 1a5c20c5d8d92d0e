#include "engine/model/transformer_options.h"

#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/model/encoder_options.h"

namespace xmc {

OptionGroup transformer_option_group() {
  return OptionGroupBuilder<TransformerOptions>("Transformer encoder")
      .integer("encoder.max_len", &TransformerOptions::max_len, 3, 8192,
               "Tokens per text, markers included (32 for titles, 128 for long text)")
      .text("encoder.pooling", &TransformerOptions::pooling, {"mean", "cls", "last"},
            "mean over the real tokens (default), bert's [CLS] vector, or a decoder's last token (EOS)")
      .text("encoder.precision", &TransformerOptions::precision, {"fp32", "bf16", "fp16"},
            "forward under autocast: bf16 on GPUs (trained weights, optimiser and losses stay fp32); fp32 = none")
      .validate([](const TrainConfig& config) {
        const EncoderOptions& encoder = config.get<EncoderOptions>();
        if (encoder.path.empty())
          throw ConfigError("encoder.path: " + encoder.type + " needs a local Hugging Face folder (config.json, weights, tokenizer)");
        const std::string& pooling = config.get<TransformerOptions>().pooling;
        if (pooling == "cls" && encoder.type != "bert")
          throw ConfigError("encoder.pooling: cls is bert's first token; a " + encoder.type + " encoder pools mean or last");
        if (pooling == "last" && encoder.type == "bert")
          throw ConfigError("encoder.pooling: last is a decoder's EOS token; bert pools mean or cls");
      })
      .build();
}

}  // namespace xmc
