// The kinds of negatives (negatives_kind.h), one registration each.
#include "engine/sampler/negatives_kind.h"

namespace xmc {

NegativesKind inbatch_negatives_kind() { return {.name = "inbatch", .description = "other queries' positives in the batch"}; }

NegativesKind hard_negatives_kind() {
  return {.name = "hard", .description = "in-batch ones plus hard ones from each query's shortlist of nearest labels", .draws_from_shortlists = true};
}

NegativesKind all_negatives_kind() {
  return {.name = "all", .description = "every label, scored chunk by chunk with cached gradients", .scores_every_label = true};
}

}  // namespace xmc
