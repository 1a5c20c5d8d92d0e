#include "engine/optim/optim_options.h"

#include <limits>

#include "engine/config/option_group_builder.h"

namespace xmc {

OptionGroup optim_option_group() {
  constexpr std::int64_t kNoMax = std::numeric_limits<std::int64_t>::max();
  return OptionGroupBuilder<OptimOptions>("Optimiser")
      .number("optim.grad_clip", &OptimOptions::grad_clip, 0, 1e30, "Clip the global gradient norm to this (0 = off)")  // gradients are float32
      .formerly("grad_clip")
      .number("optim.warmup", &OptimOptions::warmup, 0, 1, "Fraction of a stage's steps spent warming the learning rate up")
      .formerly("warmup")
      .text("optim.schedule", &OptimOptions::schedule, {"linear", "cosine", "constant"}, "Learning-rate decay after warm-up")
      .formerly("schedule")
      .integer("optim.deferred_rows_from", &OptimOptions::deferred_rows_from, 0, kNoMax,
               "AdamW on a parameter of at least this many rows (a bag-of-words word table, a classifier per label): the rows a "
               "step has no gradient for (their moments decaying, their momentum still moving them) are updated when next "
               "touched or read, in one closed-form step. The same result as every row every step up to Adam's eps, at the cost "
               "of the rows a step touches (a dense step at 1.3M rows x 256 takes ~0.13 s on 2 cores); 0 = every row every step")
      .fixed_on_resume()
      .formerly("deferred_rows_from")
      .integer("optim.deferred_sync_steps", &OptimOptions::deferred_sync_steps, 0, kNoMax,
               "Tables taking deferred updates (optim.deferred_rows_from) are brought up to date every this many steps, and a "
               "checkpoint placed by time (checkpoint.every_minutes) waits for the next such step: a row brought up in two parts "
               "rounds otherwise than in one, so a run's numbers would depend on when its checkpoints fell (~1 s a time at 1.3M "
               "words and 1.3M labels x 256). 0 = only at epochs, evaluations and checkpoints")
      .formerly("deferred_sync_steps")
      .when("method=dexml|ngame")
      .text("optim.decay", &OptimOptions::decay, {"weights", "all"},
            "Weight decay on weight matrices and tables only (biases, norms and the DE head kept from it), or on every "
            "parameter (all: as torch.optim.AdamW given every parameter, as the reference script does)")
      .text("optim.table_second_moment", &OptimOptions::table_second_moment, {"row", "element"},
            "Tables taking deferred updates (optim.deferred_rows_from): AdamW's second moment per row (the mean of the row's "
            "squared gradient, as FBGEMM's partial row-wise Adam for embedding tables: the optimiser holds once the table instead "
            "of twice, 2.7 GB less at 1.3M words and 1.3M labels x 256) or per element, as everywhere else")
      .fixed_on_resume()
      .formerly("table_second_moment")
      .text("optim.table_first_moment", &OptimOptions::table_first_moment, {"bfloat16", "float32"},
            "Tables taking deferred updates (optim.deferred_rows_from): AdamW's first moment kept in bfloat16 (float32's range, 8 "
            "bits of mantissa, rounded to nearest at each store; the arithmetic stays float32: 1.4 GB less at 1.3M words and 1.3M "
            "labels x 256) or float32")
      .fixed_on_resume()
      .formerly("table_first_moment")
      .build();
}

}  // namespace xmc
