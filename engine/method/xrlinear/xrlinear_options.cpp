#include "engine/method/xrlinear/xrlinear_options.h"

#include <filesystem>
#include <limits>

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/method/held_out_queries.h"
#include "engine/method/unidec/unidec_options.h"
#include "engine/store/run_store.h"

namespace xmc {

void check_fusable_dense_run(const XrlinearOptions& options, const std::filesystem::path& dataset, const TrainConfig& dense) {
  const std::string key = "xrlinear.dense_run: run " + std::to_string(options.dense_run);
  if (dense.method != "dexml" && dense.method != "ngame" && dense.method != "unidec")
    throw ConfigError(key + " is a " + dense.method + " run; fuse with a dexml, ngame or unidec run");
  std::error_code error;
  if (!std::filesystem::equivalent(dense.dataset, dataset, error))
    throw ConfigError(key + " trained on " + dense.dataset.string() + ", not on " + dataset.string() + " (fusion adds scores of the same labels)");
  // The weight is chosen on training queries neither side trained on: those the dense run held out.
  const double held_out = dense.method == "unidec" ? dense.get<UnidecOptions>().concat_holdout : dense.get<HeldOutOptions>().share;
  if (chooses_fusion_weight(options) && held_out <= 0)
    throw ConfigError(std::string(chooses_settings(options) ? "xrlinear.choose" : "xrlinear.fusion_weight_from") +
                      ": held-out chooses the fusion weight on training queries that neither run trained on, but " + key + " (" + dense.method +
                      ") held none out: fuse with a run trained with " + (dense.method == "unidec" ? "unidec.concat_holdout" : "holdout.share") +
                      " > 0, or set the weight with xrlinear.fusion_weight (and xrlinear.choose none)");
}

bool chooses_settings(const XrlinearOptions& options) { return options.choose == "held-out"; }

bool chooses_fusion_weight(const XrlinearOptions& options) {
  return options.fusion_weight_from == "held-out" || (options.choose == "held-out" && options.dense_run > 0);
}

bool fits_on_every_row(const XrlinearOptions& options) { return chooses_settings(options) || chooses_fusion_weight(options); }

MethodInfo xrlinear_method_info() {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  OptionGroup group =
      OptionGroupBuilder<XrlinearOptions>("xrlinear")
          .text("xrlinear.features", &XrlinearOptions::features, {"text", "dataset", "given"},
                "Sparse features: text (tf-idf fit on this run's training texts with the keys below), dataset (the dataset's "
                "features/ folder, written once by `xmc dataset featurize`) or given (the dataset's own trn_X_Xf.txt and "
                "tst_X_Xf.txt rows, L2-normalised, e.g. a mulan set's; free texts through its feature names); the three keys "
                "below are for text only, and shown with it")
          .fixed_on_resume()
          .when("xrlinear.features=text")
          .integer("xrlinear.ngrams", &XrlinearOptions::ngrams, 1, 3, "Tf-idf features: word n-grams from 1 to this many words")
          .fixed_on_resume()
          .when("xrlinear.features=text")
          .integer("xrlinear.min_df", &XrlinearOptions::min_df, 1, kMax,
                   "Tf-idf features: keep n-grams found in at least this many training texts (longer n-grams: at least 2)")
          .fixed_on_resume()
          .when("xrlinear.features=text")
          .integer("xrlinear.max_features", &XrlinearOptions::max_features, 0, kMax, "Tf-idf features: keep at most this many, the most common (0 = all)")
          .fixed_on_resume()
          .integer("xrlinear.branching", &XrlinearOptions::branching, 2, 1024, "Label tree: children per node (a power of two)")
          .fixed_on_resume()
          .integer("xrlinear.max_leaf", &XrlinearOptions::max_leaf, 1, kMax, "Label tree: most labels under a leaf cluster")
          .fixed_on_resume()
          .integer("xrlinear.kmeans_iterations", &XrlinearOptions::kmeans_iterations, 1, 1000, "Label tree: 2-means iterations per split")
          .fixed_on_resume()
          .integer("xrlinear.trees", &XrlinearOptions::trees, 1, 16,
                   "Label trees, each from its own 2-means starts (seed, seed + 1, ...) with its own rankers; a label scores the mean "
                   "of its path scores in them (training costs that many times one tree's)")
          .fixed_on_resume()
          .text("xrlinear.loss", &XrlinearOptions::loss, {"squared-hinge", "logistic"},
                "Rankers: liblinear's L2-regularised squared-hinge SVM or logistic regression (both dual solvers)")
          .fixed_on_resume()
          .number("xrlinear.cost", &XrlinearOptions::cost, 1e-6, 1e6, "Rankers: liblinear's C (larger = less regularisation)")
          .fixed_on_resume()
          .number("xrlinear.tolerance", &XrlinearOptions::tolerance, 1e-6, 10, "Rankers: liblinear's stopping tolerance")
          .fixed_on_resume()
          .number("xrlinear.prune", &XrlinearOptions::prune, 0, 1e6, "Rankers: weights smaller than this in magnitude are dropped")
          .fixed_on_resume()
          .integer("xrlinear.beam", &XrlinearOptions::beam, 1, 100000, "Inference: tree nodes kept per level of the beam search")
          .text("xrlinear.transform", &XrlinearOptions::transform, {"l3-hinge", "sigmoid"},
                "Inference: a node's score is its parent's times exp(-max(0, 1 - z)^3) (l3-hinge) or sigmoid(z) of its margin z")
          .integer("xrlinear.dense_run", &XrlinearOptions::dense_run, 0, kMax,
                   "Dense and sparse together: a finished dexml, ngame or unidec run on the same dataset (its id in this store) whose "
                   "scores are fused with the tree's in the primary mode, fused (0 = none: the tree alone)")
          .fixed_on_resume()
          .number("xrlinear.fusion_weight", &XrlinearOptions::fusion_weight, 0, 1,
                  "Dense and sparse together: the tree's weight; the dense run's min-max scaled score takes the rest (0.95 was chosen on "
                  "held-out training queries of WordNet, never on a test split; with xrlinear.fusion_weight_from held-out, it breaks ties)")
          .text("xrlinear.fusion_weight_from", &XrlinearOptions::fusion_weight_from, {"value", "held-out"},
                "Dense and sparse together: value (xrlinear.fusion_weight) or held-out (chosen after training by mean P@1 + P@3 + "
                "P@5 on the training queries the dense run held out (unidec.concat_holdout, holdout.share), by a label tree and rankers that leave "
                "them out too; then the tree and rankers are fit again on every training query, so training costs twice)")
          .fixed_on_resume()
          .integer("xrlinear.fusion_tree_top", &XrlinearOptions::fusion_tree_top, 1, 100000,
                   "Dense and sparse together, and tree and neighbours together: candidates from the tree's beam per query")
          .integer("xrlinear.fusion_dense_top", &XrlinearOptions::fusion_dense_top, 1, 100000,
                   "Dense and sparse together: candidates from the dense run's nearest labels per query")
          .integer("xrlinear.knn", &XrlinearOptions::knn, 0, 100000,
                   "Tree and neighbours together: this many training queries nearest a query (tf-idf cosine) vote for their labels, "
                   "and the votes are fused with the tree's scores in mode tree-knn, the primary one (with xrlinear.dense_run, the tree and the "
                   "votes together are then fused with the dense run's scores in mode fused) (0 = none: the tree alone)")
          .fixed_on_resume()
          .number("xrlinear.knn_weight", &XrlinearOptions::knn_weight, 0, 1,
                  "Tree and neighbours together: the weight of the tree's path scores, taken relative to the query's best candidate's; "
                  "a label's share of the neighbours' votes (the similarity of those that have it over that of all) takes the rest "
                  "(0.85 was chosen on held-out training queries of four sets, never on a test split)")
          .integer("xrlinear.knn_top", &XrlinearOptions::knn_top, 1, 100000,
                   "Tree and neighbours together: candidates from the neighbours' best-voted labels per query")
          .text("xrlinear.choose", &XrlinearOptions::choose, {"none", "held-out"},
                "none (the settings as given) or held-out: a seeded share of the training queries (xrlinear.choose_holdout) is held out, "
                "and candidates fit on the rest are scored on them by mean P@1 + P@3 + P@5: tf-idf n-grams of 1 and 2 words (text "
                "features), 1 to 3 label trees, the neighbours' weight (with xrlinear.knn) and the dense run's (with xrlinear.dense_run, on "
                "the rows it held out); the best is then fit on every training query. Every score goes to the log; the chosen values "
                "show beside the configured ones. Never chosen on a test split")
          .fixed_on_resume()
          .when("xrlinear.choose=held-out")
          .number("xrlinear.choose_holdout", &XrlinearOptions::choose_holdout, 0.01, 0.5,
                  "Choosing on held-out queries: the share of the labelled training queries held out (drawn from the run's seed); "
                  "with xrlinear.dense_run, the dense run's own held-out queries instead")
          .fixed_on_resume()
          .when("xrlinear.choose=held-out")
          .number("xrlinear.choose_budget", &XrlinearOptions::choose_budget, 1, 100,
                  "Choosing on held-out queries: what it may fit, in fits of the configured settings (xrlinear.trees trees of the first "
                  "candidate), a tree's cost counted by its features' non-zeros (a bigram tree about two), so a seed chooses alike on "
                  "every machine; candidates that would go over it are left out, and the log says which")
          .fixed_on_resume()
          .validate([](const TrainConfig& config) {
            const auto& options = config.get<XrlinearOptions>();
            if (options.fusion_weight_from == "held-out" && options.dense_run <= 0)
              throw ConfigError("xrlinear.fusion_weight_from: held-out chooses the weight of a fusion with a dense run: set xrlinear.dense_run");
            const auto branching = options.branching;
            if ((branching & (branching - 1)) != 0)
              throw ConfigError("xrlinear.branching must be a power of two (2, 4, 8, 16, ...), got " + std::to_string(branching));
          })
          .build();
  return {.name = "xrlinear",
          .description = "classic sparse baseline (PECOS XR-Linear): tf-idf features, PIFA label tree, liblinear rankers, beam search",
          .option_groups = {std::move(group)},
          .later_stage_epochs = [](const ComponentConfig& config) { return fits_on_every_row(config.get<XrlinearOptions>()) ? std::int64_t{1} : std::int64_t{0}; },
          .milestones = [](const ComponentConfig& config) {
            return fits_on_every_row(config.get<XrlinearOptions>()) ? std::vector<EpochMark>{{1, "rankers on every row"}} : std::vector<EpochMark>{};
          },
          .trains_encoder = false,
          .first_stage_epochs = [](const ComponentConfig&) { return std::int64_t{1}; },
          .check_runs_it_reads = [](const ComponentConfig& config, const RunStore& store) {
            const std::int64_t id = config.get<XrlinearOptions>().dense_run;
            if (id <= 0) return;
            const std::string key = "xrlinear.dense_run: run " + std::to_string(id);
            const std::optional<RunInfo> dense = store.find_run(id);
            if (!dense) throw ConfigError("xrlinear.dense_run: there is no run " + std::to_string(id) + " in " + store.path().string());
            check_fusable_dense_run(config.get<XrlinearOptions>(), config.run.dataset, parse_train_config(dense->config_json, "run " + std::to_string(id) + " config"));
            if (dense->status != RunStatus::Completed)
              throw ConfigError(key + " is " + to_string(dense->status) + "; fuse with a completed run (continue it first)");
          }};
}

}  // namespace xmc
