#include "engine/method/irene/irene_options.h"

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/core/error.h"
#include "engine/data/zero_shot_split.h"

#include <filesystem>

namespace xmc {

MethodInfo irene_method_info() {
  return {.name = "irene",
          .description = "IRENE: classifiers of novel labels synthesized from their text and their neighbours' classifiers, on a base run",
          .option_groups = {OptionGroupBuilder<IreneOptions>("IRENE")
               .integer("irene.base_run", &IreneOptions::base_run, 0, std::numeric_limits<std::int64_t>::max(),
                        "Finished ngame or unidec run (same store, same zero-shot split) whose encoder and classifiers IRENE builds on")
               .text("irene.generator", &IreneOptions::generator, {"transformer", "weighted_sum"},
                     "Classifier generator: one transformer layer trained on pseudo-novel labels, or the training-free weighted sum")
               .integer("irene.neighbours", &IreneOptions::neighbours, 1, 64, "K: nearest observed labels whose classifiers a new one is made from")
               .number("irene.temperature", &IreneOptions::temperature, 1e-4, 100, "T: neighbours are weighted by softmax(similarity / T)")
               .number("irene.positive_weight", &IreneOptions::positive_weight, 1e-3, 1e6, "C: weight of the positives in the generator's BCE")
               .integer("irene.heads", &IreneOptions::heads, 0, 64,
                        "Attention heads of the generator's transformer layer, a divisor of the classifiers' size (0 = the most of 4, 2, 1 that divides it)")
               .number("irene.selection_margin", &IreneOptions::selection_margin, 0, 10,
                       "A trained generator replaces the kept one (first the weighted sum) only when its mean hit@10 + hit@1 over the "
                       "selection labels is ahead by this many standard errors of the paired per-label differences (0 = any gain)")
               .text("irene.calibration", &IreneOptions::calibration, {"mean_query", "none"},
                     "Scores of a synthesized classifier u get q̄·(w̄ − u) added (q̄ the mean training query, w̄ the mean observed "
                     "classifier): it scores an average query as an average observed classifier does")
               .validate([](const TrainConfig& config) {
                 if (config.get<IreneOptions>().base_run <= 0)
                   throw ConfigError(
                       "irene.base_run: irene builds on a finished ngame or unidec run of the same store: give its id (--set irene.base_run=3)");
               })
               .build()},
          // After its last epoch the generator kept (the weighted sum until a trained one beats it on the selection labels)
          // replaces the last epoch's: the final evaluation's step from the curve is that swap, marked where it happens.
          .milestones = [](const ComponentConfig& config) {
            if (config.get<IreneOptions>().generator == "weighted_sum" || config.run.epochs <= 0) return std::vector<EpochMark>{};
            return std::vector<EpochMark>{{config.run.epochs, "best generator kept"}};
          },
          .base_run = [](const ComponentConfig& config) { return config.get<IreneOptions>().base_run; },
          .check_base_run = [](const ComponentConfig& config, const ComponentConfig& base, const std::string& base_status) {
            const std::string run = "irene.base_run: run " + std::to_string(config.get<IreneOptions>().base_run);
            if (base.run.method != "ngame" && base.run.method != "unidec")
              throw ConfigError(run + " is a " + base.run.method + " run; irene builds on the classifiers of an ngame or unidec run");
            if (base_status != "completed")
              throw ConfigError(run + " is " + base_status + "; irene builds on a completed run (continue it first)");
            std::error_code error;
            if (!std::filesystem::equivalent(base.run.dataset, config.run.dataset, error))
              throw ConfigError(run + " trained on " + base.run.dataset.string() + ", not on " + config.run.dataset.string() +
                                " (the same zero-shot split is needed)");
            if (!is_zero_shot_split(config.run.dataset))
              throw ConfigError("dataset: " + config.run.dataset.string() + " is not a zero-shot split (make one with xmc dataset split-zeroshot)");
          }};
}

}  // namespace xmc
