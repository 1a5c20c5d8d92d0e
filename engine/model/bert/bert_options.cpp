#include "engine/model/bert/bert_options.h"

#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/model/image_options.h"
#include "engine/model/transformer_options.h"

namespace xmc {

OptionGroup bert_option_group() {
  return OptionGroupBuilder<BertOptions>("BERT encoder")
      .text("encoder.packing", &BertOptions::packing, {"auto", "on", "off"},
            "Run a batch's real tokens through the projections, MLPs and LayerNorms packed into [tokens x hidden], without the "
            "padding to its longest text (attention still sees each text alone): auto = on a CPU when at least a tenth of the padded "
            "positions are padding (a GPU pads until measured there); on; off = always padded. The same vectors up to rounding; "
            "with dropout, other masks")
      .build();
}

EncoderInfo bert_encoder_info() {
  return {"bert", "a BERT-family transformer from a local Hugging Face folder (WordPiece tokens)",
          {transformer_option_group(), image_option_group(), bert_option_group()}};
}

}  // namespace xmc
