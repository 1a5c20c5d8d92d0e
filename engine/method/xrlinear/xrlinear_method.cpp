// xrlinear (after PECOS XR-Linear): the classic sparse model users compare XMC methods against, as a method like the
// others, so it trains, evaluates, searches and compares through the same trainer, store and predictor.
//
//   tokenizer  the tf-idf vectorizer (fit on the training texts once, kept in the run folder as tfidf.txt)
//   stage      "rankers", one epoch: its batches are groups of tree nodes whose children's rankers are trained
//              with liblinear (tree_rankers.h); the label tree (xrlinear.trees of them, tree_ensemble.h) is built
//              from PIFA vectors when the stage begins. With xrlinear.fusion_weight_from held-out it leaves the
//              held-out queries out and chooses the weight at its end; a second stage, "rankers-all", then builds
//              the trees and trains their rankers again on every training query
//   inference  one mode, "tree": beam search down the label tree (a QueryRanker, no label matrix); with
//              xrlinear.dense_run, first a mode "fused" that weighs the tree's scores with a dense run's
//              (score_fusion.h), its queries tokenized by both (paired_tokenizer.h), by xrlinear.fusion_weight or
//              by a weight chosen on the training queries the dense run held out (xrlinear.fusion_weight_from
//              held-out: a tree and rankers without them choose it, then both are fit again on every training
//              query); with xrlinear.choose held-out, a first stage "choose" of one step fits candidate n-grams, tree
//              counts and knn weights without a seeded share of the training queries and scores them on those
//              (settings_choice.h), then "rankers-all" fits the best on every training query; with xrlinear.knn, first a
//              mode "tree-knn" that weighs them with the votes of the nearest training queries (neighbour_votes.h),
//              whose tf-idf rows and labels the run keeps in its folder; with both, "fused" weighs the tree and the
//              votes together (as tree-knn does) against the dense run
//
// Nothing is optimised by gradients: the stage has no parameter groups and steps only report the rankers' loss.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/data/csr_file.h"
#include "engine/data/csr_rows.h"
#include "engine/data/dataset.h"
#include "engine/data/xc_sparse_file.h"
#include "engine/core/memory_budget.h"
#include "engine/eval/held_out_weight_choice.h"
#include "engine/method/held_out_queries.h"
#include "engine/method/method_registry.h"
#include "engine/method/xrlinear/beam_search.h"
#include "engine/method/xrlinear/given_features.h"
#include "engine/method/trained_run.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/neighbour_votes.h"
#include "engine/method/xrlinear/ngram_restriction.h"
#include "engine/method/xrlinear/paired_tokenizer.h"
#include "engine/method/xrlinear/pifa.h"
#include "engine/method/xrlinear/score_fusion.h"
#include "engine/method/xrlinear/settings_choice.h"
#include "engine/method/xrlinear/tree_ensemble.h"
#include "engine/method/xrlinear/tree_rankers.h"
#include "engine/method/xrlinear/xrlinear_options.h"
#include "engine/text/corpus_rows.h"
#include "engine/text/dataset_featurizer.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {
namespace {

constexpr const char* kVectorizerFile = "tfidf.txt";
/// The training queries' tf-idf rows and labels, which xrlinear.knn's neighbours are drawn from.
constexpr const char* kNeighbourFeaturesFile = "neighbour_features.csr";
constexpr const char* kNeighbourLabelsFile = "neighbour_labels.csr";
/// A stage's rankers are fit in about this many parts of similar cost, so that the progress bar and the loss plot
/// move, and a stop or a time-placed checkpoint waits at most for one part.
constexpr std::int64_t kPartsPerStage = 100;
/// Something chosen on held-out rows (xrlinear.choose, xrlinear.fusion_weight_from): the stage that fits the trees
/// again on every training query.
constexpr const char* kEveryRowStage = "rankers-all";
/// xrlinear.choose held-out: the stage of one step that fits and scores the candidates.
constexpr const char* kChoiceStage = "choose";

torch::Tensor int64_tensor(const std::vector<std::int64_t>& values) { return torch::tensor(values, torch::kInt64); }

std::vector<std::int64_t> int64_values(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kInt64).contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

/// How the rankers turn queries into sparse rows: with xrlinear.features given, the corpus's given rows where it has
/// them (given_features.h); else the tf-idf of their tokens (the first half of paired ones).
struct QueryFeatures {
  const TfidfVectorizer* vectorizer = nullptr;
  bool paired = false;
  bool given = false;
  bool names_known = true;  ///< given: whether free texts can be featurized (the features have names)
  const NgramRestriction* restriction = nullptr;  ///< the chosen n-grams of the vectorizer's, when it drops some

  QueryFeatures unpaired() const {
    QueryFeatures out = *this;
    out.paired = false;
    return out;
  }
  std::int64_t num_features() const { return restriction ? restriction->num_features() : vectorizer->num_features(); }
  CsrMatrix rows(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end) const {
    if (paired) {
      const TokenizedCorpus own = split_paired(queries, begin, end).first;
      return unpaired().rows(own, 0, own.size());
    }
    if (given && queries.features) return l2_normalized_rows(csr_row_range(*queries.features, begin, end));
    if (given && !names_known)
      throw Error("this xrlinear run ranks by the dataset's given features, which have no names (dataset.json feature_names): "
                  "a free text cannot be turned into them");
    if (restriction) return restriction->apply(vectorizer->features(queries, begin, end));
    return vectorizer->features(queries, begin, end);
  }
};

/// Beam search's `top` labels and scores ([rows x top], row-major) of every row of `features`, rows split
/// across the threads.
void beam_rank_rows(const TreeEnsembleSearch& search, const CsrMatrix& features, std::int64_t top, std::int64_t* labels, float* scores) {
  at::parallel_for(0, features.rows, 64, [&](std::int64_t first, std::int64_t last) {
    search.rank(features, first, last, top, labels + first * top, scores + first * top);
  });
}

/// The trees' `tree_top` best labels of every row of `features` ([rows x tree_top], row-major, padded with -1): the
/// tree's side of a fusion.
std::vector<std::int64_t> tree_candidates(const TreeEnsembleSearch& search, const CsrMatrix& features, std::int64_t tree_top) {
  std::vector<std::int64_t> labels(static_cast<std::size_t>(features.rows * tree_top), -1);
  std::vector<float> scores(static_cast<std::size_t>(features.rows * tree_top), 0.0f);
  beam_rank_rows(search, features, tree_top, labels.data(), scores.data());
  return labels;
}

/// Row `row` of `out` ([rows x top], already padded with -1 and 0) from a fusion's ranking.
void write_fused_row(const std::vector<FusedLabel>& fused, std::int64_t row, std::int64_t top, RankedPredictions& out) {
  auto* labels = out.labels.data_ptr<std::int64_t>() + row * top;
  auto* scores = out.scores.data_ptr<float>() + row * top;
  for (std::size_t j = 0; j < fused.size(); ++j) {
    labels[j] = fused[j].label;
    scores[j] = fused[j].score;
  }
}

/// Beam search over the tf-idf rows of tokenized queries.
class TreeRanker final : public QueryRanker {
 public:
  TreeRanker(QueryFeatures features, const std::vector<TreeModel>& trees, const BeamSearchOptions& options)
      : features_(features), num_labels_(static_cast<std::int64_t>(trees.front().tree.labels.size())), search_(trees, options, features.num_features()) {}

  RankedPredictions rank(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end, std::int64_t top) const override {
    const std::int64_t n = end - begin;
    RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
    beam_rank_rows(search_, features_.rows(queries, begin, end), top, out.labels.data_ptr<std::int64_t>(), out.scores.data_ptr<float>());
    return out;
  }
  std::int64_t num_labels() const override { return num_labels_; }

 private:
  QueryFeatures features_;
  std::int64_t num_labels_;
  TreeEnsembleSearch search_;
};

/// Tree and nearest training queries together (score_fusion.h): per query, the tree's top fusion_tree_top labels
/// and the knn_top best voted by its xrlinear.knn nearest training queries, each scored by both (the tree's path
/// score relative to the best candidate's, and its share of the neighbours' votes, 0 where none votes for it),
/// ranked by the weighted sum (fuse_with_shares).
class NeighbourFusedRanker final : public QueryRanker {
 public:
  NeighbourFusedRanker(QueryFeatures features, const std::vector<TreeModel>& trees, const XrlinearOptions& options,
                       std::shared_ptr<const NeighbourVotes> neighbours)
      : features_(features), num_labels_(static_cast<std::int64_t>(trees.front().tree.labels.size())),
        search_(trees, options.beam_search(), features.num_features()), options_(options), neighbours_(std::move(neighbours)) {}

  RankedPredictions rank(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end, std::int64_t top) const override {
    const std::int64_t n = end - begin;
    RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
    if (n == 0) return out;
    const CsrMatrix features = features_.rows(queries, begin, end);
    const std::int64_t tree_top = options_.fusion_tree_top;
    const std::vector<std::int64_t> tree_labels = tree_candidates(search_, features, tree_top);
    at::parallel_for(0, n, 16, [&](std::int64_t first, std::int64_t last) {
      NeighbourVotes::Scratch scratch;
      std::vector<float> dense_buffer;
      VotedCandidates candidates;
      for (std::int64_t row = first; row < last; ++row) {
        voted_candidates(*neighbours_, features, row, options_.knn, options_.knn_top,
                         std::span(tree_labels).subspan(static_cast<std::size_t>(row * tree_top), static_cast<std::size_t>(tree_top)), scratch, candidates);
        const std::vector<float> path = search_.path_scores(features, row, candidates.labels, &dense_buffer);
        const std::vector<FusedLabel> fused = fuse_with_shares(candidates.labels, path, candidates.shares, options_.knn_weight, top);
        write_fused_row(fused, row, top, out);
      }
    });
    return out;
  }
  std::int64_t num_labels() const override { return num_labels_; }

 private:
  QueryFeatures features_;
  std::int64_t num_labels_;
  TreeEnsembleSearch search_;
  const XrlinearOptions& options_;
  std::shared_ptr<const NeighbourVotes> neighbours_;  ///< shared: a ranker outlives the method's reloading them
};

/// The dense run a fused xrlinear run weighs its tree with: the run, and the label matrix and query encoder of
/// its primary mode that ranks by inner products.
struct DenseSide {
  TrainedRun run;
  std::string mode;           ///< the dense run's mode used ("embedding", "classifier", ...)
  std::string query_encoder;  ///< that mode's
  torch::Tensor labels;       ///< [L x d] float32, on the dense run's device
};

/// One query's candidates in a fusion with a dense run: the labels, their path scores, their shares of the nearest
/// training queries' votes (with xrlinear.knn; else empty) and their dense scores.
struct FusionCandidates {
  std::vector<std::int64_t> labels;
  std::vector<float> path;
  std::vector<float> shares;
  std::vector<float> dense;

  /// The sparse side's scores: the path scores, or with neighbours the tree and votes weighed by `knn_weight` (score_fusion.h).
  std::vector<float> sparse(double knn_weight) const { return shares.empty() ? path : share_weighted_scores(path, shares, knn_weight); }
};

/// Tree and dense run together (score_fusion.h): per query, the tree's top fusion_tree_top and the dense
/// run's top fusion_dense_top labels, each scored by both, ranked by the weighted sum with the tree's weight
/// `weight`. With `neighbours` (xrlinear.knn), the knn_top labels its nearest training queries vote for most are
/// candidates too, and the sparse side's score is the tree's and the votes' (as in mode tree-knn) before the dense
/// run's is weighed in.
class FusedRanker final : public QueryRanker {
 public:
  FusedRanker(QueryFeatures features, const std::vector<TreeModel>& trees, const XrlinearOptions& options, DenseSide& dense, double weight,
              std::shared_ptr<const NeighbourVotes> neighbours = nullptr)
      : features_(features.unpaired()), num_labels_(static_cast<std::int64_t>(trees.front().tree.labels.size())),
        search_(trees, options.beam_search(), features.num_features()), options_(options), dense_(dense), weight_(weight),
        neighbours_(std::move(neighbours)) {}

  RankedPredictions rank(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end, std::int64_t top) const override {
    const std::int64_t n = end - begin;
    RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
    if (n == 0) return out;
    const std::vector<FusionCandidates> all = candidates(queries, begin, end);
    at::parallel_for(0, n, 16, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t row = first; row < last; ++row) {
        const FusionCandidates& c = all[static_cast<std::size_t>(row)];
        write_fused_row(fuse_scores(c.labels, c.sparse(options_.knn_weight), c.dense, weight_, top), row, top, out);
      }
    });
    return out;
  }
  std::int64_t num_labels() const override { return num_labels_; }

  /// Rows [begin, end) of `queries` (paired rows): each one's candidates — the dense run's first, then the tree's not
  /// among them; with neighbours, their best voted first, then those — with every score.
  std::vector<FusionCandidates> candidates(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end) const {
    const std::int64_t n = end - begin;
    std::vector<FusionCandidates> out(static_cast<std::size_t>(n));
    if (n == 0) return out;
    const auto [own, theirs] = split_paired(queries, begin, end);
    const CsrMatrix features = features_.rows(own, 0, n);
    const std::int64_t tree_top = options_.fusion_tree_top;
    const std::vector<std::int64_t> tree_labels = tree_candidates(search_, features, tree_top);
    // The dense run's scores of every label, and its top ones.
    torch::NoGradGuard no_grad;
    const torch::Tensor q = dense_.run.method->encode_queries(dense_.query_encoder, theirs, silent_progress(), "fusion").to(torch::kFloat32);
    const torch::Tensor all = torch::matmul(q.to(dense_.labels.device()), dense_.labels.t());
    const torch::Tensor dense_labels = std::get<1>(all.topk(std::min<std::int64_t>(options_.fusion_dense_top, all.size(1)), /*dim=*/1)).to(torch::kCPU).contiguous();
    const std::int64_t dense_top = dense_labels.size(1);
    const auto* dense_label_ids = dense_labels.data_ptr<std::int64_t>();
    // Each row's candidates (and shares), then the dense scores of them all in one gather.
    at::parallel_for(0, n, 16, [&](std::int64_t first, std::int64_t last) {
      NeighbourVotes::Scratch scratch;
      VotedCandidates voted;
      for (std::int64_t row = first; row < last; ++row) {
        FusionCandidates& c = out[static_cast<std::size_t>(row)];
        c.labels.assign(dense_label_ids + row * dense_top, dense_label_ids + (row + 1) * dense_top);
        for (std::int64_t j = 0; j < tree_top; ++j) {
          const std::int64_t label = tree_labels[static_cast<std::size_t>(row * tree_top + j)];
          if (label >= 0 && std::find(c.labels.begin(), c.labels.end(), label) == c.labels.end()) c.labels.push_back(label);
        }
        if (!neighbours_) continue;
        voted_candidates(*neighbours_, features, row, options_.knn, options_.knn_top, c.labels, scratch, voted);
        c.labels.swap(voted.labels);  // voted's buffers are cleared and refilled for the next row
        c.shares.swap(voted.shares);
      }
    });
    std::size_t width = 1;
    for (const FusionCandidates& c : out) width = std::max(width, c.labels.size());
    torch::Tensor ids = torch::zeros({n, static_cast<std::int64_t>(width)}, torch::kInt64);
    for (std::int64_t row = 0; row < n; ++row) {
      const auto& labels = out[static_cast<std::size_t>(row)].labels;
      std::copy(labels.begin(), labels.end(), ids.data_ptr<std::int64_t>() + row * static_cast<std::int64_t>(width));
    }
    const torch::Tensor dense_scores = all.gather(1, ids.to(all.device())).to(torch::kCPU).contiguous();
    const auto* scores = dense_scores.data_ptr<float>();
    at::parallel_for(0, n, 16, [&](std::int64_t first, std::int64_t last) {
      std::vector<float> dense_buffer;
      for (std::int64_t row = first; row < last; ++row) {
        FusionCandidates& c = out[static_cast<std::size_t>(row)];
        const float* own_scores = scores + row * static_cast<std::int64_t>(width);
        c.dense.assign(own_scores, own_scores + c.labels.size());
        c.path = search_.path_scores(features, row, c.labels, &dense_buffer);
      }
    });
    return out;
  }

 private:
  QueryFeatures features_;  ///< of the tf-idf half of paired rows
  std::int64_t num_labels_;
  TreeEnsembleSearch search_;
  const XrlinearOptions& options_;
  DenseSide& dense_;
  double weight_;  ///< the tree's
  std::shared_ptr<const NeighbourVotes> neighbours_;  ///< with xrlinear.knn
};

class XrlinearMethod final : public Method, public StageFitting {
 public:
  explicit XrlinearMethod(const ComponentConfig& config) : config_(config), options_(config.get<XrlinearOptions>()) {
    check_ranker_options(options_.rankers(config.run.seed));
    check_beam_search_options(options_.beam_search());
  }

  std::string name() const override { return "xrlinear"; }
  bool builds_on_another_run() const override { return options_.dense_run > 0; }
  bool ranks_given_features() const override { return options_.features == "given"; }
  void use_store(const RunStore& store) override { store_ = &store; }
  StageFitting* stage_fitting() override { return this; }
  /// Each part's loss is the mean training objective of its rankers (liblinear's, per node).
  std::vector<StageSpec> stages() const override {
    const StageSpec every_row{.name = kEveryRowStage, .epoch_label = "rankers on every row, epoch", .epochs = 1, .loss_series = "loss",
                              .evaluate_between_epochs = false};
    // The choice is one part without a loss: its outcome is the chosen settings and every candidate's score, in the log.
    if (chooses_settings(options_))
      return {{.name = kChoiceStage, .epoch_label = "choosing on held-out queries, epoch", .epochs = 1, .loss_series = "",
               .evaluate_between_epochs = false, .evaluate_at_end = false},
              every_row};
    std::vector<StageSpec> out{{.name = "rankers", .epoch_label = "rankers epoch", .epochs = 1, .loss_series = "loss", .evaluate_between_epochs = false}};
    if (chooses_fusion_weight()) out.push_back(every_row);
    return out;
  }

  void build(const std::vector<std::string>& vocabulary_texts, const std::filesystem::path& run_dir) override {
    run_dir_ = run_dir;
    const auto path = run_dir / kVectorizerFile;
    // Without texts the run is being loaded, not trained: its vectorizer must be there.
    if (vocabulary_texts.empty() && !std::filesystem::exists(path)) throw InputError(path.string(), "no such file: the run's tf-idf vocabulary is missing");
    if (std::filesystem::exists(path)) {
      vectorizer_ = TfidfVectorizer::load(path);
    } else if (options_.features == "dataset") {
      const auto stored = config_.run.dataset / dataset_feature_files::kVectorizer;
      if (!std::filesystem::exists(stored))
        throw ConfigError("xrlinear.features: dataset, but " + stored.string() + " is missing: run `xmc dataset featurize " + config_.run.dataset.string() +
                          "` first, or set xrlinear.features=text");
      vectorizer_ = TfidfVectorizer::load(stored);
      vectorizer_.save(path);  // the run keeps its own copy: featurizing the dataset again does not change it
    } else if (options_.features == "given") {
      vectorizer_ = given_features_vectorizer();
      vectorizer_.save(path);
    } else {
      TfidfOptions tfidf = options_.tfidf();
      // Choosing: the longest candidate's n-grams, once; the shorter candidates are restrictions of them (ngram_restriction.h).
      if (chooses_settings(options_)) tfidf.ngrams = std::max(tfidf.ngrams, 2);
      vectorizer_ = TfidfVectorizer::fit(vocabulary_texts, tfidf);
      vectorizer_.save(path);
    }
    if (options_.dense_run > 0) attach_dense_run();
  }
  std::string description() const override {
    std::string out = options_.features == "given"
                          ? "xrlinear: the dataset's " + std::to_string(vectorizer_.num_features()) + " given features (" + dataset_files::kTrainFeatures + ")"
                          : "xrlinear: " + std::to_string(query_features().num_features()) + " tf-idf features (" + std::to_string(feature_ngrams()) + "-grams" +
                                (chooses_settings(options_) ? chosen_ngrams_ > 0 ? ", chosen on held-out queries" : ", 1 to " + std::to_string(vectorizer_.ngrams()) + " to choose from"
                                                           : "") + ")";
    if (trees_.size() == 1) out += ", label tree of " + std::to_string(trees_.front().tree.ranker_levels()) + " levels";
    if (trees_.size() > 1) out += ", " + std::to_string(trees_.size()) + " label trees of " + std::to_string(trees_.front().tree.ranker_levels()) + " levels";
    if (dense_) {
      out += "; fused with run " + std::to_string(options_.dense_run) + " (" + dense_->run.method->name() + ", its " + dense_->mode + " mode)";
      if (chosen_fusion_weight_ >= 0) out += ", the tree weighing " + format_weight(chosen_fusion_weight_) + " (chosen on held-out training queries)";
    }
    if (options_.knn > 0) out += "; fused with the votes of its " + std::to_string(options_.knn) + " nearest training queries";
    return out;
  }
  const TextTokenizer& tokenizer() const override {
    if (paired_) return *paired_;
    return vectorizer_;
  }
  torch::nn::Module& module() override { return module_; }

  /// xrlinear.fusion_weight_from held-out: the training queries the dense run held out (the same rows: the same
  /// dataset, and the dense run's own draw), so that the weight is chosen on rows neither side trained on.
  std::vector<std::int64_t> held_out_queries(std::span<const std::int64_t> labelled_rows) override {
    held_out_rows_.clear();
    if (!chooses_fusion_weight()) {
      if (chooses_settings(options_)) held_out_rows_ = choice_rows(labelled_rows);
      return held_out_rows_;
    }
    if (!dense_) throw Error("xrlinear.fusion_weight_from: held-out, but no dense run is attached");
    held_out_rows_ = dense_->run.method->held_out_queries(labelled_rows);
    if (held_out_rows_.empty())
      throw ConfigError("xrlinear.fusion_weight_from: held-out, but xrlinear.dense_run: run " + std::to_string(options_.dense_run) +
                        " held no training queries out (too few labelled queries?)");
    return held_out_rows_;
  }

  void begin_stage(const StageSpec& stage, TrainContext& context) override {
    if (context.distributed.enabled())
      throw ConfigError("xrlinear trains in one process (liblinear's rankers are not split across ranks): drop --nproc");
    if (stage.name == kChoiceStage) {
      restriction_.reset();  // chosen by the stage's one step, from the vectorizer's every n-gram
      chosen_ngrams_ = 0;
      features_ = training_features(context);
      parts_ = {{}};  // one part, the choice, without units
      return;
    }
    features_ = training_features(context);
    train_labels_ = context.dataset.train_labels;
    if (stage.name == kEveryRowStage) {
      // The weight is chosen: the trees again, on every training query (once: a resumed stage keeps the ones it had).
      context.phase("xrlinear: the label tree and rankers again, on all " + std::to_string(context.dataset.num_train()) +
                    " training queries, the held-out ones included");
      if (!trees_fit_on_every_row_) {
        build_trees(context);
        trees_fit_on_every_row_ = true;
      }
      if (options_.knn > 0) write_neighbours();
      start_ranker_training();
      parts_ = unit_parts();
      return;
    }
    // The rankers and the tree learn from the rows that train: without the held-out ones, when there are some.
    if (!held_out_rows_.empty()) {
      const std::vector<std::int64_t> kept = rows_not_held_out(features_.rows);
      features_ = csr_rows(features_, kept);
      train_labels_ = csr_rows(train_labels_, kept);
      context.phase("the rankers train on " + std::to_string(kept.size()) + " training queries: " + std::to_string(held_out_rows_.size()) +
                    " are held out to choose the fusion weight");
    }
    if (trees_.empty()) build_trees(context);
    if (options_.knn > 0) write_neighbours();
    start_ranker_training();
    parts_ = unit_parts();
  }
  void end_stage(const StageSpec& stage, TrainContext& context) override {
    training_.clear();
    features_ = CsrMatrix{};
    train_labels_ = CsrMatrix{};
    if (stage.name != kEveryRowStage && chooses_fusion_weight()) choose_fusion_weight(context);
  }
  /// Parts fitted in order: those whose every unit is trained are done (a checkpoint keeps which units are).
  FitParts fit_parts(const StageSpec& stage) const override {
    if (stage.name == kChoiceStage) return {.done = 0, .total = 1};  // chosen again when resumed before the stage's end
    const auto total = static_cast<std::int64_t>(parts_.size());
    std::int64_t done = 0;
    while (done < total && std::all_of(parts_[static_cast<std::size_t>(done)].begin(), parts_[static_cast<std::size_t>(done)].end(),
                                       [this](std::int64_t unit) { return unit_trained(unit); }))
      ++done;
    return {.done = done, .total = total};
  }
  double fit_part(const StageSpec& stage, std::int64_t part, TrainContext& context) override {
    if (part < 0 || part >= static_cast<std::int64_t>(parts_.size()))
      throw Error("xrlinear: part " + std::to_string(part) + " of stage " + stage.name + " does not exist (" + std::to_string(parts_.size()) + " parts)");
    if (stage.name == kChoiceStage) {
      choose_on_held_out(context);
      return kNoObjective;  // not stored (the stage's loss_series is "")
    }
    if (training_.empty()) throw Error("xrlinear: a part fitted before its stage began");
    torch::NoGradGuard no_grad;
    double objective = 0;
    std::int64_t fitted = 0;
    for (const std::int64_t unit : parts_[static_cast<std::size_t>(part)]) {
      if (unit_trained(unit)) continue;  // trained before a resume from an older checkpoint, whose parts were cut otherwise
      const auto [t, local] = tree_unit(unit);
      objective += training_[t]->train(local, options_.rankers(tree_seed(static_cast<std::int64_t>(t))), trees_[t].rankers);
      trained_units_[t].at(static_cast<std::size_t>(local)) = 1;
      ++fitted;
    }
    return fitted == 0 ? kNoObjective : objective / static_cast<double>(fitted);
  }

  torch::Tensor encode_queries(const std::string&, const TokenizedCorpus&, Progress&, std::string_view) override {
    throw Error("xrlinear ranks queries by beam search down its label tree: it has no query embeddings");
  }
  torch::Tensor encode_query_rows(const std::string& encoder, const TokenizedCorpus& corpus, std::span<const std::int64_t>) override {
    return encode_queries(encoder, corpus, silent_progress(), "");
  }
  std::vector<InferenceMode> inference_modes(const TokenizedCorpus&, Progress&) override {
    if (trees_.empty()) return {};
    std::vector<InferenceMode> modes{{.name = "tree", .metric_prefix = "tree", .ranker = std::make_shared<TreeRanker>(query_features(), trees_, options_.beam_search())}};
    if (options_.knn > 0) {
      if (!neighbours_) neighbours_ = load_neighbours();
      modes.insert(modes.begin(), {.name = "tree-knn", .metric_prefix = "tree-knn",
                                   .ranker = std::make_shared<NeighbourFusedRanker>(query_features(), trees_, options_, neighbours_)});
    }
    if (!dense_) return modes;
    check_dense_labels();
    // The primary mode: the tree (and the neighbours) with the dense run.
    modes.insert(modes.begin(), {.name = "fused", .metric_prefix = "fused",
                                 .ranker = std::make_shared<FusedRanker>(query_features(), trees_, options_, *dense_, fusion_weight(), neighbours_)});
    return modes;
  }
  std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus&) override {
    throw Error("xrlinear cannot take labels it was not trained on: its tree and rankers come from the training queries' labels");
  }

  // Tree 0 under the keys a run of one tree has always written ("xrlinear_levels", ...), tree t > 0 under
  // "xrlinear_tree<t>_levels", ...
  void save_state(torch::serialize::OutputArchive& archive) const override {
    for (std::size_t t = 0; t < trees_.size(); ++t) save_tree(archive, tree_key_prefix(t), trees_[t], trained_units_.at(t));
    if (chosen_fusion_weight_ >= 0) archive.write("xrlinear_fusion_weight", torch::tensor({chosen_fusion_weight_}, torch::kFloat64));
    if (chosen_ngrams_ > 0)
      archive.write("xrlinear_chosen", torch::tensor({static_cast<double>(chosen_ngrams_), static_cast<double>(options_.trees), chosen_knn_weight_}, torch::kFloat64));
    if (trees_fit_on_every_row_) archive.write("xrlinear_trees_on_every_row", torch::tensor({std::int64_t{1}}, torch::kInt64));
  }
  void load_state(torch::serialize::InputArchive& archive, std::int64_t num_labels) override {
    torch::Tensor chosen;
    if (archive.try_read("xrlinear_chosen", chosen)) {
      // n-grams, trees and the knn weight (-1: none), chosen on held-out queries: before the trees, whose count and features they set.
      const torch::Tensor values = chosen.to(torch::kFloat64).contiguous();
      const double* v = values.data_ptr<double>();
      if (values.numel() != 3 || !(v[0] >= 1 && v[0] <= vectorizer_.ngrams() && v[0] == std::floor(v[0])) || !(v[1] >= 1 && v[1] <= 16 && v[1] == std::floor(v[1])) ||
          !(v[2] == -1 || (v[2] >= 0 && v[2] <= 1)))
        throw Error("xrlinear checkpoint: xrlinear_chosen is not an n-gram length of the run's vectorizer, a tree count and a weight");
      apply_choice(static_cast<int>(v[0]), static_cast<std::int64_t>(v[1]), v[2]);
    }
    torch::Tensor weight;
    if (archive.try_read("xrlinear_fusion_weight", weight)) {
      if (weight.numel() != 1 || !(weight.item<double>() >= 0 && weight.item<double>() <= 1))
        throw Error("xrlinear checkpoint: xrlinear_fusion_weight is not one weight between 0 and 1");
      chosen_fusion_weight_ = weight.item<double>();
    }
    torch::Tensor every_row;
    trees_fit_on_every_row_ = archive.try_read("xrlinear_trees_on_every_row", every_row);
    std::vector<TreeModel> trees;
    std::vector<std::vector<char>> trained;
    for (std::size_t t = 0;; ++t) {
      torch::Tensor levels;
      if (!archive.try_read(tree_key_prefix(t) + "levels", levels)) break;
      trained.emplace_back();
      trees.push_back(load_tree(archive, tree_key_prefix(t), levels, num_labels, trained.back()));
    }
    if (trees.empty()) return;  // saved before the trees were built
    if (static_cast<std::int64_t>(trees.size()) != options_.trees)
      throw Error("xrlinear checkpoint: it holds " + std::to_string(trees.size()) + " label trees, the run's xrlinear.trees is " + std::to_string(options_.trees));
    trees_ = std::move(trees);
    trained_units_ = std::move(trained);
  }

 private:
  QueryFeatures query_features() const {
    QueryFeatures out{.vectorizer = &vectorizer_, .paired = paired_ != nullptr, .given = options_.features == "given", .restriction = restriction_.get()};
    if (out.given) {
      out.names_known = false;
      for (std::int32_t id = 0; id < vectorizer_.num_features() && !out.names_known; ++id) out.names_known = !is_unnamed_feature(vectorizer_.feature(id));
    }
    return out;
  }

  /// The training queries' sparse rows, as xrlinear.features says.
  CsrMatrix training_features(TrainContext& context) const {
    if (options_.features == "dataset") {
      const auto stored = config_.run.dataset / dataset_feature_files::kTrain;
      context.phase("tf-idf features of the training queries (" + stored.string() + ")");
      CsrMatrix features = read_csr_file(stored);
      if (features.rows != context.dataset.num_train() || features.cols != vectorizer_.num_features())
        throw InputError(stored.string(), "holds " + std::to_string(features.rows) + " x " + std::to_string(features.cols) + " features, but the dataset has " +
                                              std::to_string(context.dataset.num_train()) + " training queries and the run's vectorizer " +
                                              std::to_string(vectorizer_.num_features()) + " features: run `xmc dataset featurize` again");
      return restricted(features);
    }
    if (options_.features == "given") {
      const auto given = config_.run.dataset / dataset_files::kTrainFeatures;
      if (!context.train_corpus.features) throw Error("xrlinear: the training queries came without the dataset's given features (" + given.string() + ")");
      context.phase("the training queries' given features (" + given.string() + "), L2-normalised");
      CsrMatrix features = l2_normalized_rows(*context.train_corpus.features);
      if (features.cols != vectorizer_.num_features())
        throw InputError(given.string(), "has " + std::to_string(features.cols) + " feature columns, the run's vocabulary " +
                                             std::to_string(vectorizer_.num_features()) + ": the dataset changed since the run began");
      return features;
    }
    context.phase("tf-idf features of the training queries");
    return query_features().rows(context.train_corpus, 0, context.train_corpus.size());
  }

  /// xrlinear.trees label trees over features_ and train_labels_, their rankers untrained.
  void build_trees(TrainContext& context) {
    context.phase("label tree: PIFA vectors");
    const CsrMatrix label_vectors = pifa_label_vectors(train_labels_, features_);
    trees_.clear();
    for (std::int64_t t = 0; t < options_.trees; ++t) {
      context.phase(options_.trees == 1 ? std::string("label tree: balanced 2-means")
                                        : "label tree " + std::to_string(t + 1) + " of " + std::to_string(options_.trees) + ": balanced 2-means");
      TreeModel model;
      model.tree = build_label_tree(label_vectors, options_.tree(tree_seed(t)), context.progress);
      model.rankers = empty_rankers(model.tree);
      trees_.push_back(std::move(model));
    }
    trained_units_.clear();
  }

  /// The trees' training units over features_ and train_labels_ (those already trained stay marked).
  void start_ranker_training() {
    training_.clear();
    unit_start_.assign(1, 0);
    trained_units_.resize(trees_.size());
    for (std::size_t t = 0; t < trees_.size(); ++t) {
      training_.push_back(std::make_unique<RankerTraining>(trees_[t].tree, features_, train_labels_));
      unit_start_.push_back(unit_start_.back() + training_.back()->num_units());
      trained_units_[t].resize(static_cast<std::size_t>(training_.back()->num_units()), 0);
    }
  }

  bool chooses_fusion_weight() const { return xmc::chooses_fusion_weight(options_); }

  /// Rows 0 .. `rows` − 1 of the training queries without the held-out ones, ascending.
  std::vector<std::int64_t> rows_not_held_out(std::int64_t rows) const {
    std::vector<std::int64_t> kept;
    kept.reserve(static_cast<std::size_t>(rows));
    for (std::int64_t row = 0; row < rows; ++row)
      if (!std::binary_search(held_out_rows_.begin(), held_out_rows_.end(), row)) kept.push_back(row);
    return kept;
  }

  /// Rows of the vectorizer's features as the rankers read them: the chosen n-grams only, once chosen.
  CsrMatrix restricted(const CsrMatrix& rows) const { return restriction_ ? restriction_->apply(rows) : rows; }

  /// The n-gram length of the features the rankers read: the chosen one, else the vectorizer's.
  int feature_ngrams() const { return restriction_ ? restriction_->max_words() : vectorizer_.ngrams(); }

  /// xrlinear.choose held-out without a dense run: xrlinear.choose_holdout of the labelled training queries (held_out_queries.h).
  std::vector<std::int64_t> choice_rows(std::span<const std::int64_t> labelled_rows) const {
    if (labelled_rows.size() < 2)
      throw ConfigError("xrlinear.choose: held-out needs at least two labelled training queries, the dataset has " + std::to_string(labelled_rows.size()));
    return draw_held_out_rows(labelled_rows, options_.choose_holdout, config_.run.seed, kChoiceHoldoutStream);
  }

  /// The choice stage's one step: candidates fit on the training queries not held out and scored on those held out
  /// (settings_choice.h); the best is kept, with its trees (fit without the held-out queries) for the fusion weight's
  /// choice.
  void choose_on_held_out(TrainContext& context) {
    if (held_out_rows_.empty()) throw Error("xrlinear.choose: no training queries were held out to choose on");
    const std::vector<std::int64_t> kept = rows_not_held_out(features_.rows);
    const CsrMatrix& labels = context.dataset.train_labels;
    const CsrMatrix fit_features = csr_rows(features_, kept), fit_labels = csr_rows(labels, kept);
    const CsrMatrix held_features = csr_rows(features_, held_out_rows_), held_labels = csr_rows(labels, held_out_rows_);
    ChoiceOptions choice_options{.configured = options_, .seed = config_.run.seed, .max_trees = 3, .budget = options_.choose_budget, .threads = at::get_num_threads()};
    choice_options.ngrams.clear();
    for (int n = 1; n <= vectorizer_.ngrams(); ++n) choice_options.ngrams.push_back(n);
    if (options_.knn > 0)
      for (int i = 4; i <= 20; ++i) choice_options.knn_weights.push_back(i / 20.0);  // 0.20, 0.25, ..., 1 (1: the tree alone)
    context.phase("xrlinear.choose: candidates fit on " + std::to_string(kept.size()) + " training queries, scored on the " +
                  std::to_string(held_out_rows_.size()) + " held out");
    SettingsChoice choice = choose_settings(vectorizer_, {.features = fit_features, .labels = fit_labels, .held_out_features = held_features,
                                                          .held_out_labels = held_labels},
                                            choice_options, context.progress, context.phase);
    apply_choice(choice.ngrams, choice.trees, choice.knn_weight);
    trees_ = std::move(choice.trees_fit);
    trained_units_.clear();
    for (const TreeModel& model : trees_) trained_units_.emplace_back(static_cast<std::size_t>(ranker_unit_count(model.tree)), 1);
    trees_fit_on_every_row_ = false;
    if (options_.knn > 0) {
      // A run stopped before the fit on every row ranks with the chosen candidate and its neighbours, the held-out queries left out.
      features_ = restricted(fit_features);
      train_labels_ = fit_labels;
      write_neighbours();
    }
    if (options_.features != "given") context.chose("xrlinear.ngrams", choice.ngrams);
    context.chose("xrlinear.trees", static_cast<double>(choice.trees));
    if (options_.knn > 0) context.chose("xrlinear.knn_weight", choice.knn_weight);
  }

  /// Settings chosen on held-out queries (or read back from a checkpoint): the rankers read n-grams of at most `ngrams` words,
  /// the run has `trees` trees, and the tree weighs `knn_weight` against the neighbours (-1: no neighbours).
  void apply_choice(int ngrams, std::int64_t trees, double knn_weight) {
    restriction_ = ngrams < vectorizer_.ngrams() ? std::make_unique<NgramRestriction>(vectorizer_, ngrams) : nullptr;
    chosen_ngrams_ = ngrams;
    options_.trees = trees;
    chosen_knn_weight_ = knn_weight;
    if (knn_weight >= 0) options_.knn_weight = knn_weight;
  }

  /// The neighbours' index travels with the run, so that it ranks the same way wherever it is loaded.
  void write_neighbours() {
    write_csr_file(run_dir_ / kNeighbourFeaturesFile, features_);
    write_csr_file(run_dir_ / kNeighbourLabelsFile, train_labels_);
    neighbours_.reset();
  }

  /// ConfigError unless the dense run ranks as many labels as the trees.
  void check_dense_labels() const {
    if (dense_->labels.size(0) != num_tree_labels())
      throw ConfigError("xrlinear.dense_run: run " + std::to_string(options_.dense_run) + " ranks " + std::to_string(dense_->labels.size(0)) +
                        " labels, this run's tree " + std::to_string(num_tree_labels()));
  }

  /// The tree's weight in the fused mode: the one chosen on held-out queries, else xrlinear.fusion_weight.
  double fusion_weight() const { return chosen_fusion_weight_ >= 0 ? chosen_fusion_weight_ : options_.fusion_weight; }
  static std::string format_weight(double weight) {
    char text[16];
    std::snprintf(text, sizeof text, "%.2f", weight);
    return text;
  }

  /// xrlinear.fusion_weight_from held-out, once the rankers are trained: the weight (0, 0.05, ..., 1) whose fused
  /// ranking of the held-out training queries has the best mean P@1 + P@3 + P@5; ties go to the one nearest
  /// xrlinear.fusion_weight. The candidates and both scores of a query are made once, then fused by every weight.
  void choose_fusion_weight(TrainContext& context) {
    const auto count = static_cast<std::int64_t>(held_out_rows_.size());
    check_dense_labels();
    context.phase("xrlinear: choosing the fusion weight on " + std::to_string(count) + " training queries held out by both runs");
    std::vector<double> grid;
    for (int i = 0; i <= 20; ++i) grid.push_back(i / 20.0);
    HeldOutWeightChoice choice(grid);
    const TokenizedCorpus held = corpus_rows(context.train_corpus, held_out_rows_);
    const CsrMatrix& labels = context.dataset.train_labels;
    if (options_.knn > 0) neighbours_ = load_neighbours();  // the rows the trees were fit on
    const FusedRanker ranker(query_features(), trees_, options_, *dense_, options_.fusion_weight, neighbours_);  // null without knn
    // The dense side scores a chunk of queries against every label ([chunk x L] floats, within its memory share).
    const std::int64_t entries = memory_budget_part(memory_share::kFusionScores) / static_cast<std::int64_t>(sizeof(float));
    const std::int64_t chunk = std::clamp<std::int64_t>(entries / std::max<std::int64_t>(dense_->labels.size(0), 1), 1, 1024);
    context.progress.start("scoring held-out queries", count);
    std::vector<std::int64_t> ranked;
    for (std::int64_t start = 0; start < count; start += chunk) {
      const std::int64_t end = std::min(count, start + chunk);
      const std::vector<FusionCandidates> all = ranker.candidates(held, start, end);
      for (std::int64_t i = start; i < end; ++i) {
        const FusionCandidates& c = all[static_cast<std::size_t>(i - start)];
        const std::vector<float> sparse = c.sparse(options_.knn_weight);
        const auto truth = labels.row_indices(held_out_rows_[static_cast<std::size_t>(i)]);
        for (std::size_t w = 0; w < grid.size(); ++w) {
          ranked.clear();
          for (const FusedLabel& label : fuse_scores(c.labels, sparse, c.dense, grid[w], 5)) ranked.push_back(label.label);
          choice.add_score(w, precision_1_3_5(ranked, truth));
        }
      }
      choice.add_queries(end - start);
      context.progress.update(end);
    }
    context.progress.finish();
    chosen_fusion_weight_ = choice.best(options_.fusion_weight);
    context.chose("xrlinear.fusion_weight", chosen_fusion_weight_);
    context.phase("xrlinear: fusion weight " + format_weight(chosen_fusion_weight_) + " (mean P@1 + P@3 + P@5 of " + std::to_string(count) +
                  " held-out training queries by the tree's weight — " + choice.curve(2) + ")");
  }

  /// xrlinear.features given: free texts are featurized through the given features' names (given_features.h); a
  /// folder without names (dataset.json feature_names) gets placeholders, as many as trn_X_Xf.txt has columns.
  TfidfVectorizer given_features_vectorizer() const {
    const auto given = config_.run.dataset / dataset_files::kTrainFeatures;
    if (!std::filesystem::exists(given))
      throw ConfigError("xrlinear.features: given, but " + given.string() + " is missing: the dataset has no given features (set xrlinear.features=text)");
    const DatasetMeta meta = read_dataset_meta(config_.run.dataset);
    // Without names, the header's column count (the trainer reads the rows themselves).
    const std::int64_t count = meta.feature_names.empty() ? XcSparseReader(given).cols() : static_cast<std::int64_t>(meta.feature_names.size());
    return vectorizer_over_feature_names(meta.feature_names, count);
  }

  /// Tree t's seed (2-means starts and liblinear's draws): the run's seed for the first, then the next ones.
  std::uint64_t tree_seed(std::int64_t t) const { return config_.run.seed + static_cast<std::uint64_t>(t); }
  static std::string tree_key_prefix(std::size_t t) { return t == 0 ? "xrlinear_" : "xrlinear_tree" + std::to_string(t) + "_"; }
  std::int64_t num_tree_labels() const { return trees_.empty() ? 0 : static_cast<std::int64_t>(trees_.front().tree.labels.size()); }

  static void save_tree(torch::serialize::OutputArchive& archive, const std::string& key, const TreeModel& model, const std::vector<char>& trained) {
    const LabelTree& tree = model.tree;
    archive.write(key + "levels", torch::tensor(tree.ranker_levels(), torch::kInt64));
    for (std::int64_t t = 0; t < tree.ranker_levels(); ++t) {
      const std::string level = std::to_string(t);
      archive.write(key + "offsets_" + level, int64_tensor(tree.child_offsets[static_cast<std::size_t>(t)]));
      // The level's rankers as CSR rows plus biases.
      std::vector<std::int64_t> indptr{0};
      std::vector<std::int32_t> features;
      std::vector<float> weights;
      std::vector<float> biases;
      for (const SparseRanker& r : model.rankers[static_cast<std::size_t>(t)]) {
        features.insert(features.end(), r.features.begin(), r.features.end());
        weights.insert(weights.end(), r.weights.begin(), r.weights.end());
        biases.push_back(r.bias);
        indptr.push_back(static_cast<std::int64_t>(features.size()));
      }
      archive.write(key + "indptr_" + level, int64_tensor(indptr));
      archive.write(key + "features_" + level, torch::tensor(features, torch::kInt32));
      archive.write(key + "weights_" + level, torch::tensor(weights, torch::kFloat32));
      archive.write(key + "biases_" + level, torch::tensor(biases, torch::kFloat32));
    }
    archive.write(key + "labels", torch::tensor(tree.labels, torch::kInt32));
    archive.write(key + "trained", torch::tensor(std::vector<std::int64_t>(trained.begin(), trained.end()), torch::kInt64));
  }

  TreeModel load_tree(torch::serialize::InputArchive& archive, const std::string& key, const torch::Tensor& levels, std::int64_t num_labels,
                      std::vector<char>& trained_units) const {
    TreeModel model;
    LabelTree& tree = model.tree;
    TreeRankers& rankers = model.rankers;
    const std::int64_t feature_count = query_features().num_features();
    if (levels.numel() != 1) throw Error("xrlinear checkpoint: " + key + "levels holds " + std::to_string(levels.numel()) + " values");
    const std::int64_t count = levels.to(torch::kInt64).item<std::int64_t>();
    if (count < 1 || count > 64) throw Error("xrlinear checkpoint: " + key + "levels says " + std::to_string(count) + " tree levels");
    for (std::int64_t t = 0; t < count; ++t) {
      const std::string level = std::to_string(t);
      torch::Tensor offsets, indptr, features, weights, biases;
      archive.read(key + "offsets_" + level, offsets);
      archive.read(key + "indptr_" + level, indptr);
      archive.read(key + "features_" + level, features);
      archive.read(key + "weights_" + level, weights);
      archive.read(key + "biases_" + level, biases);
      tree.child_offsets.push_back(int64_values(offsets));
      const std::vector<std::int64_t> rows = int64_values(indptr);
      const torch::Tensor f = features.to(torch::kInt32).contiguous();
      const torch::Tensor w = weights.to(torch::kFloat32).contiguous();
      const torch::Tensor b = biases.to(torch::kFloat32).contiguous();
      if (rows.empty() || rows.front() != 0 || rows.back() != f.numel() || f.numel() != w.numel() || b.numel() + 1 != static_cast<std::int64_t>(rows.size()) ||
          !std::is_sorted(rows.begin(), rows.end()))
        throw Error("xrlinear checkpoint: the rankers of level " + level + " (" + key + "indptr_" + level + ") are inconsistent");
      std::vector<SparseRanker> level_rankers(static_cast<std::size_t>(b.numel()));
      for (std::size_t j = 0; j < level_rankers.size(); ++j) {
        SparseRanker& r = level_rankers[j];
        r.features.assign(f.data_ptr<std::int32_t>() + rows[j], f.data_ptr<std::int32_t>() + rows[j + 1]);
        r.weights.assign(w.data_ptr<float>() + rows[j], w.data_ptr<float>() + rows[j + 1]);
        r.bias = b.data_ptr<float>()[j];
        for (const std::int32_t feature : r.features)
          if (feature < 0 || feature >= feature_count)
            throw Error("xrlinear checkpoint: a ranker of level " + level + " weighs feature " + std::to_string(feature) + ", outside the " +
                        std::to_string(feature_count) + " tf-idf features");
      }
      rankers.push_back(std::move(level_rankers));
    }
    torch::Tensor labels, trained;
    archive.read(key + "labels", labels);
    archive.read(key + "trained", trained);
    const torch::Tensor l = labels.to(torch::kInt32).contiguous();
    tree.labels.assign(l.data_ptr<std::int32_t>(), l.data_ptr<std::int32_t>() + l.numel());
    check_label_tree(tree, num_labels);
    for (std::int64_t t = 0; t < count; ++t)
      if (static_cast<std::int64_t>(rankers[static_cast<std::size_t>(t)].size()) != tree.nodes_at(t + 1))
        throw Error("xrlinear checkpoint: level " + std::to_string(t) + " of " + key + "* has rankers for " + std::to_string(rankers[static_cast<std::size_t>(t)].size()) +
                    " nodes, its tree " + std::to_string(tree.nodes_at(t + 1)));
    const std::vector<std::int64_t> flags = int64_values(trained);
    trained_units.assign(flags.begin(), flags.end());
    return model;
  }

  /// Loads xrlinear.dense_run, checks that it ranks the same dataset's labels by inner products, and pairs
  /// its tokenizer with the tf-idf one.
  void attach_dense_run() {
    const std::string key = "xrlinear.dense_run: run " + std::to_string(options_.dense_run);
    if (store_ == nullptr) throw Error("xrlinear fused with a dense run needs the run store holding it");
    auto side = std::make_unique<DenseSide>();
    side->run = load_trained_run(*store_, options_.dense_run, config_.run.device);
    check_fusable_dense_run(options_, config_.run.dataset, side->run.config);  // checked before the run was recorded too; the store may have changed since
    torch::NoGradGuard no_grad;
    const TokenizedCorpus labels = side->run.label_corpus();
    for (InferenceMode& mode : side->run.method->inference_modes(labels, silent_progress())) {
      if (!mode.scores_every_label_by_vector()) continue;
      side->mode = mode.name;
      side->query_encoder = mode.query_encoder;
      side->labels = mode.label_matrix.to(torch::kFloat32);
      break;
    }
    if (side->mode.empty())
      throw ConfigError(key + " (" + side->run.method->name() + ") has no mode that ranks labels by inner products (has it finished training?)");
    dense_ = std::move(side);
    paired_ = std::make_unique<PairedTokenizer>(vectorizer_, dense_->run.method->tokenizer());
  }

  /// The training queries' tf-idf rows and labels written when the stage began, checked against the run's
  /// vectorizer and tree.
  std::shared_ptr<const NeighbourVotes> load_neighbours() const {
    const auto features_path = run_dir_ / kNeighbourFeaturesFile;
    const auto labels_path = run_dir_ / kNeighbourLabelsFile;
    for (const auto& path : {features_path, labels_path})
      if (!std::filesystem::exists(path)) throw InputError(path.string(), "no such file: xrlinear.knn's training rows are missing from the run folder");
    const CsrMatrix features = read_csr_file(features_path);
    const CsrMatrix labels = read_csr_file(labels_path);
    if (features.cols != query_features().num_features())
      throw InputError(features_path.string(), "holds " + std::to_string(features.cols) + " features, the run's vectorizer " +
                                                   std::to_string(query_features().num_features()));
    if (labels.cols != num_tree_labels())
      throw InputError(labels_path.string(), "holds " + std::to_string(labels.cols) + " labels, the run's tree " + std::to_string(num_tree_labels()));
    if (labels.rows != features.rows)
      throw InputError(labels_path.string(), "holds " + std::to_string(labels.rows) + " rows, " + features_path.string() + " " +
                                                 std::to_string(features.rows));
    return std::make_shared<const NeighbourVotes>(features, labels);
  }

  /// Unit `unit` (numbered tree after tree) as its tree and its number in that tree, while a stage runs.
  std::pair<std::size_t, std::int64_t> tree_unit(std::int64_t unit) const {
    if (unit < 0 || unit_start_.empty() || unit >= unit_start_.back()) throw Error("xrlinear: training unit " + std::to_string(unit) + " does not exist");
    const auto t = static_cast<std::size_t>(std::upper_bound(unit_start_.begin(), unit_start_.end(), unit) - unit_start_.begin() - 1);
    return {t, unit - unit_start_[t]};
  }
  bool unit_trained(std::int64_t unit) const {
    const auto [t, local] = tree_unit(unit);
    return trained_units_.at(t).at(static_cast<std::size_t>(local)) != 0;
  }

  /// Every unit of the stage, tree after tree, in order, cut into about kPartsPerStage parts of similar cost (the
  /// same parts after a resume, whose trained units say how far it got).
  std::vector<std::vector<std::int64_t>> unit_parts() const {
    std::int64_t total = 0;
    for (std::size_t t = 0; t < training_.size(); ++t)
      for (std::int64_t u = 0; u < training_[t]->num_units(); ++u) total += training_[t]->unit_cost(u);
    const std::int64_t per_part = std::max<std::int64_t>(1, total / kPartsPerStage);
    std::vector<std::vector<std::int64_t>> out;
    std::int64_t cost = 0;
    for (std::size_t t = 0; t < training_.size(); ++t)
      for (std::int64_t u = 0; u < training_[t]->num_units(); ++u) {
        if (out.empty() || cost >= per_part) {
          out.emplace_back();
          cost = 0;
        }
        out.back().push_back(unit_start_[t] + u);
        cost += training_[t]->unit_cost(u);
      }
    return out;
  }

  ComponentConfig config_;
  XrlinearOptions options_;
  TfidfVectorizer vectorizer_;
  const RunStore* store_ = nullptr;          ///< the store holding xrlinear.dense_run (use_store)
  std::unique_ptr<DenseSide> dense_;          ///< set with xrlinear.dense_run
  std::unique_ptr<PairedTokenizer> paired_;   ///< the tf-idf and the dense run's tokens, with dense_
  std::filesystem::path run_dir_;
  std::shared_ptr<const NeighbourVotes> neighbours_;  ///< with xrlinear.knn, once an inference mode needs it
  torch::nn::Module module_;  ///< no parameters: the model lives in the checkpoint's method state
  std::vector<TreeModel> trees_;                    ///< xrlinear.trees of them once built
  std::vector<std::vector<char>> trained_units_;     ///< per tree, per training unit: trained yet
  std::vector<std::int64_t> unit_start_;            ///< tree t's units are [unit_start_[t], unit_start_[t + 1]), while the stage runs
  CsrMatrix features_;                         ///< the training queries', while the stage runs
  CsrMatrix train_labels_;                     ///< the training queries' labels (without the held-out ones), while the stage runs
  std::vector<std::unique_ptr<RankerTraining>> training_;   ///< one per tree, while the stage runs
  std::vector<std::int64_t> held_out_rows_;    ///< training queries neither side trains on (xrlinear.fusion_weight_from held-out)
  double chosen_fusion_weight_ = -1;           ///< the weight chosen on them, once chosen
  std::unique_ptr<NgramRestriction> restriction_;  ///< the chosen n-grams, when shorter than the vectorizer's
  int chosen_ngrams_ = 0;                      ///< xrlinear.choose: the n-gram length chosen (0 until chosen)
  double chosen_knn_weight_ = -1;              ///< and the knn weight (-1: no neighbours)
  bool trees_fit_on_every_row_ = false;        ///< the trees are the "rankers-all" stage's (held-out rows included)
  std::vector<std::vector<std::int64_t>> parts_;  ///< the current stage's parts of training units (unit_parts), or the choice's one empty part
};

}  // namespace

std::unique_ptr<Method> make_xrlinear_method(const ComponentConfig& config) { return std::make_unique<XrlinearMethod>(config); }

}  // namespace xmc
