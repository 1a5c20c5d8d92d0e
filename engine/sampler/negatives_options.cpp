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
      .when("negatives=hard")
      .text("hard.search", &NegativesOptions::search, {"auto", "exact", "hnsw"},
            "How hard-negative shortlists (hard.* and UniDEC's psl.*) are found: exact top-k, an HNSW graph over the labels "
            "(approximate; its recall against exact on 1,000 sampled queries is logged at every refresh), or auto: HNSW from "
            "hard.search_above labels, exact below. Exact is the default: on 2 cores at 1.3M labels the graph was no faster "
            "than exact search and kept 74 % of the exact top-100 of untrained embeddings (bench/RESULTS.md)")
      .when("negatives=hard")
      .integer("hard.search_above", &NegativesOptions::search_above, 1, std::numeric_limits<std::int64_t>::max(),
               "With hard.search = auto: the label count from which shortlists are approximate (exact search costs queries x labels)")
      .when("negatives=all;" + dual_encoder_methods)
      .integer("all.label_chunk", &NegativesOptions::label_chunk, 1, 1 << 24, "Labels encoded per chunk when negatives = all")
      .build();
}

}  // namespace xmc
