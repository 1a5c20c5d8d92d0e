#pragma once
// xrlinear's own options (plain data, no torch): its tf-idf features, label tree, rankers and beam search
// (xrlinear_options.cpp registers the keys `xrlinear.*`).
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/method/xrlinear/beam_search.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/tree_rankers.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {

struct MethodInfo;

struct XrlinearOptions {
  std::string features = "text";  ///< "text": a vectorizer fit on the run's texts; "dataset": the dataset's features/;
                                  ///< "given": the dataset's trn/tst_X_Xf.txt rows (given_features.h)
  std::int64_t ngrams = 1;        ///< word n-grams of the tf-idf features, 1 .. ngrams
  std::int64_t min_df = 1;        ///< fewest training texts a kept n-gram occurs in
  std::int64_t max_features = 0;  ///< most tf-idf features (0 = all)
  std::int64_t branching = 16;    ///< children per tree node
  std::int64_t max_leaf = 100;    ///< most labels under a leaf cluster
  std::int64_t kmeans_iterations = 20;
  std::int64_t trees = 1;         ///< label trees from seeds seed, seed + 1, ... whose path scores are averaged
  std::string loss = "squared-hinge";
  double cost = 1.0;
  double tolerance = 0.1;
  double prune = 0.1;
  std::int64_t beam = 10;
  std::string transform = "l3-hinge";
  std::int64_t dense_run = 0;     ///< a dense run on the same dataset to fuse with (0 = none)
  double fusion_weight = 0.95;    ///< the tree's weight in the fused score (score_fusion.h)
  std::string fusion_weight_from = "value";  ///< "value": fusion_weight; "held-out": chosen on the training queries the
                                             ///< dense run held out (unidec.concat_holdout) by a tree and rankers that
                                             ///< leave them out, then both fit again on every training query
  std::int64_t fusion_tree_top = 20;    ///< candidates the tree's beam gives the fusion per query
  std::int64_t fusion_dense_top = 100;  ///< candidates the dense run gives the fusion per query
  std::int64_t knn = 0;           ///< nearest training queries whose labels are fused with the tree's (0 = none)
  double knn_weight = 0.85;       ///< the tree's weight in that fusion (score_fusion.h: fuse_with_shares)
  std::int64_t knn_top = 100;     ///< candidates the neighbours' votes give the fusion per query
  std::string choose = "none";    ///< "held-out": n-grams, trees and the knn weight chosen on held-out training
                                  ///< queries (settings_choice.h), then fit on every training query
  double choose_holdout = 0.08;   ///< the share of the labelled training queries held out to choose on
  double choose_budget = 3;       ///< the choice's time, in fits of the configured settings

  TfidfOptions tfidf() const { return {.ngrams = static_cast<int>(ngrams), .min_df = min_df, .max_features = max_features}; }
  LabelTreeOptions tree(std::uint64_t seed) const {
    return {.branching = branching, .max_leaf = max_leaf, .iterations = kmeans_iterations, .seed = seed};
  }
  RankerOptions rankers(std::uint64_t seed) const {
    return {.loss = loss, .cost = cost, .tolerance = tolerance, .prune = prune, .seed = seed};
  }
  BeamSearchOptions beam_search() const { return {.beam = beam, .transform = transform}; }
};

struct TrainConfig;

/// Throws ConfigError naming xrlinear.dense_run when run `dense` (its config) cannot be fused into a run of `options` on `dataset`:
/// not a dexml, ngame or unidec run, or trained on another dataset; with xrlinear.fusion_weight_from held-out, one
/// that held no training queries out (a unidec run with unidec.concat_holdout > 0 does).
void check_fusable_dense_run(const XrlinearOptions& options, const std::filesystem::path& dataset, const TrainConfig& dense);

/// Whether a run of `options` fits a second stage, its rankers again on every row once something is chosen on held-out
/// rows (xrlinear.choose held-out, or xrlinear.fusion_weight_from held-out on the dense run's).
bool fits_on_every_row(const XrlinearOptions& options);
/// Whether a run of `options` chooses its settings on held-out rows (xrlinear.choose held-out).
bool chooses_settings(const XrlinearOptions& options);
/// Whether a run of `options` chooses its fusion weight with a dense run on the rows that run held out (xrlinear.fusion_weight_from
/// held-out, or xrlinear.choose held-out with xrlinear.dense_run).
bool chooses_fusion_weight(const XrlinearOptions& options);

/// xrlinear's registration: name, help and option group.
MethodInfo xrlinear_method_info();

}  // namespace xmc
