#include "engine/sampler/negatives_options.h"

#include "engine/config/option_group_builder.h"

namespace xmc {

OptionGroup negatives_option_group() {
  // The hard.* and all.* keys are read by the dual-encoder training of DEXML and NGAME; the pick-some-labels
  // methods keep shortlists of their own (psl.*).
  const std::string dual_encoder_methods = "method=dexml|ngame";
  return OptionGroupBuilder<NegativesOptions>("Negatives")
      .text("negatives", &NegativesOptions::kind, {"inbatch", "hard", "all"},
            "Negatives: other queries' positives, plus hard ones from an ANN shortlist, or all labels (gradient caching)")
      .when("negatives=hard;" + dual_encoder_methods)
      .integer("hard.per_query", &NegativesOptions::hard_per_query, 1, 10000, "Hard negatives sampled per query from its shortlist")
      .when("negatives=hard;" + dual_encoder_methods)
      .integer("hard.shortlist", &NegativesOptions::shortlist, 1, 100000, "Shortlist size: exact top-k labels per query, positives removed")
      .when("negatives=hard;" + dual_encoder_methods)
      .integer("hard.refresh_every", &NegativesOptions::refresh_every, 1, std::numeric_limits<std::int64_t>::max(),
               "Epochs between shortlist refreshes")
      .when("negatives=all;" + dual_encoder_methods)
      .integer("all.label_chunk", &NegativesOptions::label_chunk, 1, 1 << 24, "Labels encoded per chunk when negatives = all")
      .build();
}

}  // namespace xmc
