#include "engine/method/unidec/unidec_options.h"

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/core/error.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/sampler/negatives_options.h"
#include "engine/sampler/psl_options.h"

namespace xmc {

namespace {

std::vector<EpochMark> psl_shortlist_marks(const ComponentConfig& config) {
  if (!negatives_kind(config.get<NegativesOptions>().kind).draws_from_shortlists) return {};
  // Searched at the start of hard.start_epoch, then every τ epochs; epoch 0 is not marked.
  const std::int64_t every = config.get<PslOptions>().refresh_every, start = config.get<NegativesOptions>().start_epoch;
  return periodic_marks(start > 0 ? start : every, every, config.run.epochs, "shortlists");
}

}  // namespace

MethodInfo unidec_method_info() {
  OptionGroup classifiers =
      OptionGroupBuilder<UnidecOptions>("UniDEC classifiers")
          .number("unidec.lambda", &UnidecOptions::lambda, 0, 1, "λ: loss = λ·dual-encoder loss + (1-λ)·classifier loss")
          .number("unidec.classifier_lr", &UnidecOptions::classifier_lr, 0, 100, "Learning rate of the classifier table Ψ (its own)")
          .text("unidec.classifier_optimizer", &UnidecOptions::classifier_optimizer, {"adamw", "lazy_adamw"},
                "Update of Ψ: adamw (every row every step, the moments of rows outside the pool decaying) or lazy_adamw (only the rows "
                "of the step's label pool, with their moments, as SparseAdam does: a step's cost no longer grows with the label count)")
          .number("unidec.bce_weight", &UnidecOptions::bce_weight, 0, 100, "Weight of an auxiliary BCE on the classifier scores (0 = off)")
          .text("unidec.classifier_init", &UnidecOptions::classifier_init, {"label_text", "random"},
                "Classifiers start as the CLF head's encoding of each label's text, or random")
          .number("unidec.concat_weight", &UnidecOptions::concat_weight, 0, 1,
                  "Concat inference ranks by (1-w)·de + w·clf + b_l, b_l the label's learned bias (unidec.label_bias): w = 0.5 is the "
                  "paper's plain sum; with a learned bias w = 0 is de plus the bias, not the de mode alone")
          .number("unidec.concat_holdout", &UnidecOptions::concat_holdout, 0, 0.5,
                  "Share of the training queries (with labels) held out of training; after training, concat's w is chosen "
                  "on them from 0, 0.1, ..., 1 by mean P@1 + P@3 + P@5 (0 = none held out: w = unidec.concat_weight)")
          .text("unidec.clf_head", &UnidecOptions::clf_head, {"linear", "none"},
                "CLF head g2: Linear + dropout (the paper's), or none (classifiers over the encoder's normalised output)")
          .text("unidec.label_bias", &UnidecOptions::label_bias, {"none", "learned"},
                "A learned per-label bias added to classifier scores (a label prior; none in the paper)")
          .check_resume([](const TrainConfig& before, const TrainConfig& after) {
            // The held-out queries are drawn from the seed: changing either would train on queries held out so far.
            const double held_out = before.get<UnidecOptions>().concat_holdout;
            if (after.get<UnidecOptions>().concat_holdout != held_out || (held_out > 0 && after.seed != before.seed))
              throw ConfigError(
                  "resume: unidec.concat_holdout (and, with it, seed, which draws the held-out queries) cannot change when resuming a run");
          })
          .build();
  return {.name = "unidec",
          .description = "UniDEC: dual encoder and classifiers together on pick-some-labels batches; concat, de and clf inference",
          .option_groups = {psl_option_group(), std::move(classifiers)},
          .milestones = psl_shortlist_marks,
          .loss_sums_terms = true};
}

MethodInfo depsl_method_info() {
  return {.name = "depsl",
          .description = "DEPSL: UniDEC's dual encoder alone on pick-some-labels batches",
          .option_groups = {psl_option_group()},
          .milestones = psl_shortlist_marks,
          .loss_sums_terms = true};
}

}  // namespace xmc
