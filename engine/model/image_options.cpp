#include "engine/model/image_options.h"

#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"

namespace xmc {

OptionGroup image_option_group() {
  return OptionGroupBuilder<ImageOptions>("Images")
      .integer("images.max", &ImageOptions::max, 0, 16,
               "Image tokens per item, from the dataset's image banks (images/*.npy); 0 = text only. No effect without banks")
      .fixed_on_resume()
      .text("images.fusion", &ImageOptions::fusion, {"early", "late"},
            "early: projected images join the text tokens inside the encoder (ViXML); late: their mean is added to the pooled text vector")
      .fixed_on_resume()
      .build();
}

bool reads_image_banks(const TrainConfig& config) { return config.get<ImageOptions>().max > 0; }

}  // namespace xmc
