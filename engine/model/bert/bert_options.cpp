#include "engine/config/component_info.h"
#include "engine/model/image_options.h"
#include "engine/model/transformer_options.h"

namespace xmc {

EncoderInfo bert_encoder_info() {
  return {"bert", "a BERT-family transformer from a local Hugging Face folder (WordPiece tokens)", {transformer_option_group(), image_option_group()}};
}

}  // namespace xmc
