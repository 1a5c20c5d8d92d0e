// xrlinear (after PECOS XR-Linear): the classic sparse model users compare XMC methods against, as a method like the
// others, so it trains, evaluates, searches and compares through the same trainer, store and predictor.
//
//   tokenizer  the tf-idf vectorizer (fit on the training texts once, kept in the run folder as tfidf.txt)
//   stage      "rankers", one epoch: its batches are groups of tree nodes whose children's rankers are trained
//              with liblinear (tree_rankers.h); the label tree is built from PIFA vectors when the stage begins
//   inference  one mode, "tree": beam search down the label tree (a QueryRanker, no label matrix); with
//              xrlinear.dense_run, first a mode "fused" that weighs the tree's scores with a dense run's
//              (score_fusion.h), its queries tokenized by both (paired_tokenizer.h)
//
// Nothing is optimised by gradients: the stage has no parameter groups and steps only report the rankers' loss.
#include <ATen/Parallel.h>

#include <algorithm>

#include "engine/data/csr_file.h"
#include "engine/data/dataset.h"
#include "engine/method/method_registry.h"
#include "engine/method/xrlinear/beam_search.h"
#include "engine/method/trained_run.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/paired_tokenizer.h"
#include "engine/method/xrlinear/pifa.h"
#include "engine/method/xrlinear/score_fusion.h"
#include "engine/method/xrlinear/tree_rankers.h"
#include "engine/method/xrlinear/xrlinear_options.h"
#include "engine/text/dataset_featurizer.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {
namespace {

constexpr const char* kVectorizerFile = "tfidf.txt";
/// About this many steps per epoch, so that the progress bar and the loss plot move.
constexpr std::int64_t kStepsPerEpoch = 100;

torch::Tensor int64_tensor(const std::vector<std::int64_t>& values) { return torch::tensor(values, torch::kInt64); }

std::vector<std::int64_t> int64_values(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kInt64).contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

/// The tf-idf rows of queries [begin, end): from their own tokens, or from the first half of paired ones.
CsrMatrix tfidf_rows(const TfidfVectorizer& vectorizer, bool paired, const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end) {
  if (!paired) return vectorizer.features(queries, begin, end);
  const TokenizedCorpus own = split_paired(queries, begin, end).first;
  return vectorizer.features(own, 0, own.size());
}

/// Beam search's `top` labels and scores ([rows x top], row-major) of every row of `features`, rows split
/// across the threads.
void beam_rank_rows(const BeamSearch& search, const CsrMatrix& features, std::int64_t top, std::int64_t* labels, float* scores) {
  at::parallel_for(0, features.rows, 64, [&](std::int64_t first, std::int64_t last) {
    search.rank(features, first, last, top, labels + first * top, scores + first * top);
  });
}

/// Beam search over the tf-idf rows of tokenized queries.
class TreeRanker final : public QueryRanker {
 public:
  TreeRanker(const TfidfVectorizer& vectorizer, const LabelTree& tree, const TreeRankers& rankers, BeamSearchOptions options, bool paired)
      : vectorizer_(vectorizer), tree_(tree), search_(tree, rankers, std::move(options), vectorizer.num_features()), paired_(paired) {}

  RankedPredictions rank(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end, std::int64_t top) const override {
    const std::int64_t n = end - begin;
    RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
    beam_rank_rows(search_, tfidf_rows(vectorizer_, paired_, queries, begin, end), top, out.labels.data_ptr<std::int64_t>(), out.scores.data_ptr<float>());
    return out;
  }
  std::int64_t num_labels() const override { return static_cast<std::int64_t>(tree_.labels.size()); }

 private:
  const TfidfVectorizer& vectorizer_;
  const LabelTree& tree_;
  BeamSearch search_;
  bool paired_;
};

/// The dense run a fused xrlinear run weighs its tree with: the run, and the label matrix and query encoder of
/// its primary mode that ranks by inner products.
struct DenseSide {
  TrainedRun run;
  std::string mode;           ///< the dense run's mode used ("embedding", "classifier", ...)
  std::string query_encoder;  ///< that mode's
  torch::Tensor labels;       ///< [L x d] float32, on the dense run's device
};

/// Tree and dense run together (score_fusion.h): per query, the tree's top fusion_tree_top and the dense
/// run's top fusion_dense_top labels, each scored by both, ranked by the weighted sum.
class FusedRanker final : public QueryRanker {
 public:
  FusedRanker(const TfidfVectorizer& vectorizer, const LabelTree& tree, const TreeRankers& rankers, const XrlinearOptions& options, DenseSide& dense)
      : vectorizer_(vectorizer), tree_(tree), search_(tree, rankers, options.beam_search(), vectorizer.num_features()), options_(options), dense_(dense) {}

  RankedPredictions rank(const TokenizedCorpus& queries, std::int64_t begin, std::int64_t end, std::int64_t top) const override {
    const std::int64_t n = end - begin;
    RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
    if (n == 0) return out;
    const auto [own, theirs] = split_paired(queries, begin, end);
    const CsrMatrix features = vectorizer_.features(own, 0, n);
    // The tree's candidates.
    const std::int64_t tree_top = options_.fusion_tree_top;
    std::vector<std::int64_t> tree_labels(static_cast<std::size_t>(n * tree_top), -1);
    std::vector<float> tree_scores(static_cast<std::size_t>(n * tree_top), 0.0f);
    beam_rank_rows(search_, features, tree_top, tree_labels.data(), tree_scores.data());
    // The dense run's: its top labels with their scores, and its scores of the tree's candidates.
    torch::NoGradGuard no_grad;
    const torch::Tensor q = dense_.run.method->encode_queries(dense_.query_encoder, theirs, silent_progress(), "fusion").to(torch::kFloat32);
    const torch::Tensor all = torch::matmul(q.to(dense_.labels.device()), dense_.labels.t());
    const auto [top_scores, top_labels] = all.topk(std::min<std::int64_t>(options_.fusion_dense_top, all.size(1)), /*dim=*/1);
    const torch::Tensor tree_ids = torch::tensor(tree_labels, torch::kInt64).view({n, tree_top});
    const torch::Tensor at_tree = all.gather(1, tree_ids.clamp_min(0).to(all.device())).to(torch::kCPU).contiguous();
    const torch::Tensor dense_labels = top_labels.to(torch::kCPU).contiguous();
    const torch::Tensor dense_scores = top_scores.to(torch::kCPU).contiguous();
    const std::int64_t dense_top = dense_labels.size(1);
    const auto* dense_label_ids = dense_labels.data_ptr<std::int64_t>();
    const auto* dense_label_scores = dense_scores.data_ptr<float>();
    const auto* tree_label_dense_scores = at_tree.data_ptr<float>();
    auto* labels_out = out.labels.data_ptr<std::int64_t>();
    auto* scores_out = out.scores.data_ptr<float>();
    at::parallel_for(0, n, 16, [&](std::int64_t first, std::int64_t last) {
      std::vector<std::int64_t> candidates;
      std::vector<float> dense;
      for (std::int64_t row = first; row < last; ++row) {
        candidates.clear();
        dense.clear();
        for (std::int64_t j = 0; j < dense_top; ++j) {
          candidates.push_back(dense_label_ids[row * dense_top + j]);
          dense.push_back(dense_label_scores[row * dense_top + j]);
        }
        for (std::int64_t j = 0; j < tree_top; ++j) {
          const std::int64_t label = tree_labels[static_cast<std::size_t>(row * tree_top + j)];
          if (label < 0 || std::find(candidates.begin(), candidates.end(), label) != candidates.end()) continue;
          candidates.push_back(label);
          dense.push_back(tree_label_dense_scores[row * tree_top + j]);
        }
        const std::vector<float> path = search_.path_scores(features, row, candidates);
        const std::vector<FusedLabel> fused = fuse_scores(candidates, path, dense, options_.fusion_weight, top);
        for (std::size_t j = 0; j < fused.size(); ++j) {
          labels_out[row * top + static_cast<std::int64_t>(j)] = fused[j].label;
          scores_out[row * top + static_cast<std::int64_t>(j)] = fused[j].score;
        }
      }
    });
    return out;
  }
  std::int64_t num_labels() const override { return static_cast<std::int64_t>(tree_.labels.size()); }

 private:
  const TfidfVectorizer& vectorizer_;
  const LabelTree& tree_;
  BeamSearch search_;
  const XrlinearOptions& options_;
  DenseSide& dense_;
};

class XrlinearMethod final : public Method {
 public:
  explicit XrlinearMethod(const TrainConfig& config) : config_(config), options_(config.get<XrlinearOptions>()) {
    check_ranker_options(options_.rankers(config.seed));
    check_beam_search_options(options_.beam_search());
  }

  std::string name() const override { return "xrlinear"; }
  bool builds_on_another_run() const override { return options_.dense_run > 0; }
  void use_store(const RunStore& store) override { store_ = &store; }
  std::vector<StageSpec> stages() const override {
    return {{.name = "rankers", .epoch_label = "rankers epoch", .epochs = 1, .loss_series = "loss", .clip_gradients = false,
             .evaluate_between_epochs = false, .batches_are_training_rows = false}};
  }

  void build(const std::vector<std::string>& vocabulary_texts, const std::filesystem::path& run_dir) override {
    const auto path = run_dir / kVectorizerFile;
    // Without texts the run is being loaded, not trained: its vectorizer must be there.
    if (vocabulary_texts.empty() && !std::filesystem::exists(path)) throw InputError(path.string(), "no such file: the run's tf-idf vocabulary is missing");
    if (std::filesystem::exists(path)) {
      vectorizer_ = TfidfVectorizer::load(path);
    } else if (options_.features == "dataset") {
      const auto stored = config_.dataset / dataset_feature_files::kVectorizer;
      if (!std::filesystem::exists(stored))
        throw ConfigError("xrlinear.features: dataset, but " + stored.string() + " is missing: run `xmc dataset featurize " + config_.dataset.string() +
                          "` first, or set xrlinear.features=text");
      vectorizer_ = TfidfVectorizer::load(stored);
      vectorizer_.save(path);  // the run keeps its own copy: featurizing the dataset again does not change it
    } else {
      vectorizer_ = TfidfVectorizer::fit(vocabulary_texts, options_.tfidf());
      vectorizer_.save(path);
    }
    if (options_.dense_run > 0) attach_dense_run();
  }
  std::string description() const override {
    std::string out = "xrlinear: " + std::to_string(vectorizer_.num_features()) + " tf-idf features (" + std::to_string(vectorizer_.ngrams()) + "-grams)";
    if (!tree_.child_offsets.empty()) out += ", label tree of " + std::to_string(tree_.ranker_levels()) + " levels";
    if (dense_) out += "; fused with run " + std::to_string(options_.dense_run) + " (" + dense_->run.method->name() + ", its " + dense_->mode + " mode)";
    return out;
  }
  const TextTokenizer& tokenizer() const override {
    if (paired_) return *paired_;
    return vectorizer_;
  }
  torch::nn::Module& module() override { return module_; }

  void begin_stage(const StageSpec&, TrainContext& context) override {
    if (context.distributed.enabled())
      throw ConfigError("xrlinear trains in one process (liblinear's rankers are not split across ranks): drop --nproc");
    if (options_.features == "dataset") {
      const auto stored = config_.dataset / dataset_feature_files::kTrain;
      context.phase("tf-idf features of the training queries (" + stored.string() + ")");
      features_ = read_csr_file(stored);
      if (features_.rows != context.dataset.num_train() || features_.cols != vectorizer_.num_features())
        throw InputError(stored.string(), "holds " + std::to_string(features_.rows) + " x " + std::to_string(features_.cols) + " features, but the dataset has " +
                                              std::to_string(context.dataset.num_train()) + " training queries and the run's vectorizer " +
                                              std::to_string(vectorizer_.num_features()) + " features: run `xmc dataset featurize` again");
    } else {
      context.phase("tf-idf features of the training queries");
      features_ = tfidf_rows(vectorizer_, paired_ != nullptr, context.train_corpus, 0, context.train_corpus.size());
    }
    if (tree_.child_offsets.empty()) {
      context.phase("label tree: PIFA vectors, balanced 2-means");
      tree_ = build_label_tree(pifa_label_vectors(context.dataset.train_labels, features_), options_.tree(config_.seed), context.progress);
      rankers_ = empty_rankers(tree_);
      trained_units_.clear();
    }
    training_ = std::make_unique<RankerTraining>(tree_, features_, context.dataset.train_labels);
    trained_units_.resize(static_cast<std::size_t>(training_->num_units()), 0);
    batches_ = unit_batches();
  }
  void end_stage(const StageSpec&, TrainContext&) override {
    training_.reset();
    features_ = CsrMatrix{};
  }
  std::vector<ParameterGroup> parameter_groups(const StageSpec&) override { return {}; }
  std::int64_t batches_per_epoch(const StageSpec&) const override { return static_cast<std::int64_t>(batches_.size()); }
  std::vector<std::vector<std::int64_t>> epoch_batches(const StageSpec&, std::int64_t, TrainContext&) override { return batches_; }
  StepResult train_step(const StageSpec&, std::span<const std::int64_t> batch, const PreparedBatch*, TrainContext&) override {
    if (!training_) throw Error("xrlinear: a training step before the stage began");
    torch::NoGradGuard no_grad;
    double loss = 0;
    for (const std::int64_t unit : batch) {
      loss += training_->train(unit, options_.rankers(config_.seed), rankers_);
      trained_units_.at(static_cast<std::size_t>(unit)) = 1;
    }
    return {.loss = batch.empty() ? 0.0 : loss / static_cast<double>(batch.size()), .query_embeddings = {}};
  }

  torch::Tensor encode_queries(const std::string&, const TokenizedCorpus&, Progress&, std::string_view) override {
    throw Error("xrlinear ranks queries by beam search down its label tree: it has no query embeddings");
  }
  torch::Tensor encode_query_rows(const std::string& encoder, const TokenizedCorpus& corpus, std::span<const std::int64_t>) override {
    return encode_queries(encoder, corpus, silent_progress(), "");
  }
  std::vector<InferenceMode> inference_modes(const TokenizedCorpus&, Progress&) override {
    if (tree_.child_offsets.empty()) return {};
    InferenceMode tree{.name = "tree", .metric_prefix = "tree",
                       .ranker = std::make_shared<TreeRanker>(vectorizer_, tree_, rankers_, options_.beam_search(), paired_ != nullptr)};
    if (!dense_) return {tree};
    if (dense_->labels.size(0) != static_cast<std::int64_t>(tree_.labels.size()))
      throw ConfigError("xrlinear.dense_run: run " + std::to_string(options_.dense_run) + " ranks " + std::to_string(dense_->labels.size(0)) +
                        " labels, this run's tree " + std::to_string(tree_.labels.size()));
    return {{.name = "fused", .metric_prefix = "fused", .ranker = std::make_shared<FusedRanker>(vectorizer_, tree_, rankers_, options_, *dense_)}, tree};
  }
  std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus&) override {
    throw Error("xrlinear cannot take labels it was not trained on: its tree and rankers come from the training queries' labels");
  }

  void save_state(torch::serialize::OutputArchive& archive) const override {
    if (tree_.child_offsets.empty()) return;
    archive.write("xrlinear_levels", torch::tensor(tree_.ranker_levels(), torch::kInt64));
    for (std::int64_t t = 0; t < tree_.ranker_levels(); ++t) {
      const std::string level = std::to_string(t);
      archive.write("xrlinear_offsets_" + level, int64_tensor(tree_.child_offsets[static_cast<std::size_t>(t)]));
      // The level's rankers as CSR rows plus biases.
      std::vector<std::int64_t> indptr{0};
      std::vector<std::int32_t> features;
      std::vector<float> weights;
      std::vector<float> biases;
      for (const SparseRanker& r : rankers_[static_cast<std::size_t>(t)]) {
        features.insert(features.end(), r.features.begin(), r.features.end());
        weights.insert(weights.end(), r.weights.begin(), r.weights.end());
        biases.push_back(r.bias);
        indptr.push_back(static_cast<std::int64_t>(features.size()));
      }
      archive.write("xrlinear_indptr_" + level, int64_tensor(indptr));
      archive.write("xrlinear_features_" + level, torch::tensor(features, torch::kInt32));
      archive.write("xrlinear_weights_" + level, torch::tensor(weights, torch::kFloat32));
      archive.write("xrlinear_biases_" + level, torch::tensor(biases, torch::kFloat32));
    }
    archive.write("xrlinear_labels", torch::tensor(tree_.labels, torch::kInt32));
    archive.write("xrlinear_trained", torch::tensor(std::vector<std::int64_t>(trained_units_.begin(), trained_units_.end()), torch::kInt64));
  }
  void load_state(torch::serialize::InputArchive& archive, std::int64_t num_labels) override {
    torch::Tensor levels;
    if (!archive.try_read("xrlinear_levels", levels)) return;  // saved before the tree was built
    LabelTree tree;
    TreeRankers rankers;
    const std::int64_t count = levels.item<std::int64_t>();
    if (count < 1 || count > 64) throw Error("xrlinear checkpoint: " + std::to_string(count) + " tree levels");
    for (std::int64_t t = 0; t < count; ++t) {
      const std::string level = std::to_string(t);
      torch::Tensor offsets, indptr, features, weights, biases;
      archive.read("xrlinear_offsets_" + level, offsets);
      archive.read("xrlinear_indptr_" + level, indptr);
      archive.read("xrlinear_features_" + level, features);
      archive.read("xrlinear_weights_" + level, weights);
      archive.read("xrlinear_biases_" + level, biases);
      tree.child_offsets.push_back(int64_values(offsets));
      const std::vector<std::int64_t> rows = int64_values(indptr);
      const torch::Tensor f = features.to(torch::kInt32).contiguous();
      const torch::Tensor w = weights.to(torch::kFloat32).contiguous();
      const torch::Tensor b = biases.to(torch::kFloat32).contiguous();
      if (rows.empty() || rows.front() != 0 || rows.back() != f.numel() || f.numel() != w.numel() || b.numel() + 1 != static_cast<std::int64_t>(rows.size()) ||
          !std::is_sorted(rows.begin(), rows.end()))
        throw Error("xrlinear checkpoint: the rankers of level " + level + " are inconsistent");
      std::vector<SparseRanker> level_rankers(static_cast<std::size_t>(b.numel()));
      for (std::size_t j = 0; j < level_rankers.size(); ++j) {
        SparseRanker& r = level_rankers[j];
        r.features.assign(f.data_ptr<std::int32_t>() + rows[j], f.data_ptr<std::int32_t>() + rows[j + 1]);
        r.weights.assign(w.data_ptr<float>() + rows[j], w.data_ptr<float>() + rows[j + 1]);
        r.bias = b.data_ptr<float>()[j];
        for (const std::int32_t feature : r.features)
          if (feature < 0 || feature >= vectorizer_.num_features())
            throw Error("xrlinear checkpoint: a ranker of level " + level + " weighs feature " + std::to_string(feature) + ", outside the " +
                        std::to_string(vectorizer_.num_features()) + " tf-idf features");
      }
      rankers.push_back(std::move(level_rankers));
    }
    torch::Tensor labels, trained;
    archive.read("xrlinear_labels", labels);
    archive.read("xrlinear_trained", trained);
    const torch::Tensor l = labels.to(torch::kInt32).contiguous();
    tree.labels.assign(l.data_ptr<std::int32_t>(), l.data_ptr<std::int32_t>() + l.numel());
    check_label_tree(tree, num_labels);
    for (std::int64_t t = 0; t < count; ++t)
      if (static_cast<std::int64_t>(rankers[static_cast<std::size_t>(t)].size()) != tree.nodes_at(t + 1))
        throw Error("xrlinear checkpoint: level " + std::to_string(t) + " has rankers for " + std::to_string(rankers[static_cast<std::size_t>(t)].size()) +
                    " nodes, its tree " + std::to_string(tree.nodes_at(t + 1)));
    tree_ = std::move(tree);
    rankers_ = std::move(rankers);
    const std::vector<std::int64_t> flags = int64_values(trained);
    trained_units_.assign(flags.begin(), flags.end());
  }

 private:
  /// Loads xrlinear.dense_run, checks that it ranks the same dataset's labels by inner products, and pairs
  /// its tokenizer with the tf-idf one.
  void attach_dense_run() {
    const std::string key = "xrlinear.dense_run: run " + std::to_string(options_.dense_run);
    if (store_ == nullptr) throw Error("xrlinear fused with a dense run needs the run store holding it");
    auto side = std::make_unique<DenseSide>();
    side->run = load_trained_run(*store_, options_.dense_run, config_.device);
    check_fusable_dense_run(config_, side->run.config);  // checked before the run was recorded too; the store may have changed since
    torch::NoGradGuard no_grad;
    const TokenizedCorpus labels = side->run.label_corpus();
    for (InferenceMode& mode : side->run.method->inference_modes(labels, silent_progress())) {
      if (mode.ranker || mode.subset || !mode.label_matrix.defined()) continue;
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

  /// The units not trained yet, in order, cut into about kStepsPerEpoch batches of similar cost.
  std::vector<std::vector<std::int64_t>> unit_batches() const {
    std::vector<std::int64_t> pending;
    std::int64_t total = 0;
    for (std::int64_t u = 0; u < training_->num_units(); ++u) {
      if (trained_units_[static_cast<std::size_t>(u)]) continue;
      pending.push_back(u);
      total += training_->unit_cost(u);
    }
    const std::int64_t per_batch = std::max<std::int64_t>(1, total / kStepsPerEpoch);
    std::vector<std::vector<std::int64_t>> out;
    std::int64_t cost = 0;
    for (const std::int64_t u : pending) {
      if (out.empty() || cost >= per_batch) {
        out.emplace_back();
        cost = 0;
      }
      out.back().push_back(u);
      cost += training_->unit_cost(u);
    }
    return out;
  }

  TrainConfig config_;
  XrlinearOptions options_;
  TfidfVectorizer vectorizer_;
  const RunStore* store_ = nullptr;          ///< the store holding xrlinear.dense_run (use_store)
  std::unique_ptr<DenseSide> dense_;          ///< set with xrlinear.dense_run
  std::unique_ptr<PairedTokenizer> paired_;   ///< the tf-idf and the dense run's tokens, with dense_
  torch::nn::Module module_;  ///< no parameters: the model lives in the checkpoint's method state
  LabelTree tree_;
  TreeRankers rankers_;
  std::vector<char> trained_units_;
  CsrMatrix features_;                         ///< the training queries', while the stage runs
  std::unique_ptr<RankerTraining> training_;   ///< while the stage runs
  std::vector<std::vector<std::int64_t>> batches_;
};

}  // namespace

std::unique_ptr<Method> make_xrlinear_method(const TrainConfig& config) { return std::make_unique<XrlinearMethod>(config); }

}  // namespace xmc
