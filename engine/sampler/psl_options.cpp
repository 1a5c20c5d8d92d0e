#include "engine/sampler/psl_options.h"

#include "engine/config/option_group_builder.h"

namespace xmc {

OptionGroup psl_option_group() {
  return OptionGroupBuilder<PslOptions>("Pick-some-labels")
      .integer("psl.positives", &PslOptions::positives, 1, 100000, "β: positives sampled per query into the batch's label pool")
      .when("negatives=hard")
      .integer("psl.hard_negatives", &PslOptions::hard_negatives, 1, 100000, "η: hard negatives per query and epoch from its shortlist")
      .when("negatives=hard")
      .integer("psl.shortlist", &PslOptions::shortlist, 1, 100000, "Shortlist size: top labels by DE embedding per query, positives removed")
      .when("negatives=hard")
      .integer("psl.refresh_every", &PslOptions::refresh_every, 1, std::numeric_limits<std::int64_t>::max(),
               "τ: epochs between shortlist refreshes (each query sees η·τ distinct shortlist labels per window)")
      .integer("psl.pool_size", &PslOptions::pool_size, 0, std::numeric_limits<std::int64_t>::max(),
               "Cap on the batch's label pool (0 = none); sampled positives always stay")
      .text("psl.directions", &PslOptions::directions, {"both", "query_to_label"},
            "Loss directions: queries ranking labels and labels ranking queries (0.5 each), or the first alone")
      .text("psl.de_head", &PslOptions::de_head, {"tanh_linear", "normalize"},
            "DE embeddings: the DE head L2norm(Tanh(Linear(Φ))), or the encoder's output normalised (as NGAME)")
      .build();
}

}  // namespace xmc
