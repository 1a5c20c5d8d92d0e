#include "engine/method/dexml/dexml_info.h"

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/method/dexml/dexml_options.h"
#include "engine/config/train_config.h"
#include "engine/method/held_out_queries.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/sampler/negatives_options.h"

namespace xmc {

std::vector<EpochMark> hard_negative_shortlist_marks(const ComponentConfig& config) {
  const NegativesOptions& negatives = config.get<NegativesOptions>();
  if (!negatives_kind(negatives.kind).draws_from_shortlists) return {};
  // Searched at the start of hard.start_epoch, then every refresh_every epochs; epoch 0 is not marked.
  const std::int64_t start = negatives.start_epoch;
  return periodic_marks(start > 0 ? start : negatives.refresh_every, negatives.refresh_every, config.run.epochs, "shortlists");
}

OptionGroup dexml_option_group() {
  return OptionGroupBuilder<DexmlOptions>("DEXML")
      .text("dexml.head", &DexmlOptions::head, {"tanh_linear", "normalize"},
            "DE embeddings: the DE head L2norm(Tanh(Linear(Φ))), or the encoder's output normalised (as NGAME, and the "
            "reference script, which has no head)")
      .fixed_on_resume()
      .build();
}

MethodInfo dexml_method_info() {
  // DEXML's knobs are mostly the shared ones: encoder, loss, negatives and batching, and the held-out queries it shares
  // with NGAME; its own is the DE head.
  return {.name = "dexml",
          .description = "dual encoder with (decoupled) softmax over in-batch, hard or all-label negatives",
          .option_groups = {dexml_option_group(), held_out_option_group()},
          .milestones = hard_negative_shortlist_marks};
}

}  // namespace xmc
