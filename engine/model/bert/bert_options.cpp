#include "engine/model/bert/bert_options.h"

#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/core/error.h"
#include "engine/model/encoder_options.h"

namespace xmc {

EncoderInfo bert_encoder_info() {
  return {"bert", "a BERT-family transformer from a local Hugging Face folder (WordPiece tokens)",
          {OptionGroupBuilder<BertOptions>("BERT encoder")
      .integer("encoder.max_len", &BertOptions::max_len, 3, 8192, "Tokens per text for bert (32 for titles, 128 for long text)")
      .text("encoder.pooling", &BertOptions::pooling, {"mean", "cls"}, "bert: mean over tokens or the [CLS] vector")
      .text("encoder.precision", &BertOptions::precision, {"fp32", "bf16", "fp16"},
            "bert forward under autocast: bf16 on GPUs (weights, optimiser and losses stay fp32); fp32 = none")
      .validate([](const TrainConfig& config) {
        if (config.get<EncoderOptions>().path.empty())
          throw ConfigError("encoder.path: bert needs a local Hugging Face folder (config.json, model.safetensors, vocab.txt)");
      })
      .build()}};
}

}  // namespace xmc
