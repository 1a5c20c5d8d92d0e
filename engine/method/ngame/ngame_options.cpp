#include "engine/method/ngame/ngame_options.h"

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/method/dexml/dexml_info.h"
#include "engine/method/held_out_queries.h"

namespace xmc {

MethodInfo ngame_method_info() {
  return {.name = "ngame",
          .description = "NGAME: M1 encoder on clustered batches, then M4 classifiers on the frozen encoder",
          .option_groups = {OptionGroupBuilder<NgameOptions>("NGAME")
               .integer("ngame.m4_epochs", &NgameOptions::m4_epochs, 0, std::numeric_limits<std::int64_t>::max(),
                        "NGAME: epochs of classifier training (M4) on the frozen encoder")
               .number("ngame.fusion", &NgameOptions::fusion, 0, 1, "NGAME: weight of classifier scores in the fused ranking")
               .build(),
                            held_out_option_group()},
          .later_stage_epochs = [](const ComponentConfig& config) { return config.get<NgameOptions>().m4_epochs; },
          .milestones = [](const ComponentConfig& config) {
            // M1 trains the encoder as DEXML does; M4 comes after its epochs, with the encoder frozen.
            std::vector<EpochMark> marks = hard_negative_shortlist_marks(config);
            if (config.get<NgameOptions>().m4_epochs > 0) marks.push_back({config.run.epochs, "M4: classifiers"});
            return marks;
          }};
}

}  // namespace xmc
