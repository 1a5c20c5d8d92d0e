// UniDEC (dual encoder and classifiers trained together on pick-some-labels batches) and DEPSL (its dual
// encoder alone). One stage trains the shared encoder Φ, the DE head g1 and — for UniDEC — the CLF head g2
// and the classifier table Ψ (at its own learning rate) on batches of clustered queries (NGAME's batcher
// over the DE query embeddings). Each batch's label pool holds ≤β sampled positives and η shortlist
// negatives per query (engine/sampler/psl_batch.h); the loss is λ·L_D + (1-λ)·L_C, each the symmetric
// (q→l and l→q) multi-class loss ℓ_MC = config `loss` (supcon or decoupled_softmax in the presets), plus an
// optional BCE on the classifier scores. Inference: concat (primary), de, clf (unidec_model.h). With
// unidec.concat_holdout > 0 a share of the training queries never trains: concat's weight is chosen on them
// once training ends (concat_weight_choice.h), and the checkpoint keeps it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "engine/core/allocator_tuning.h"
#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/dataset.h"
#include "engine/loss/loss_entry.h"
#include "engine/method/unidec/concat_weight_choice.h"
#include "engine/method/held_out_queries.h"
#include "engine/method/method_registry.h"
#include "engine/method/epoch_query_encodings.h"
#include "engine/method/unidec/unidec_model.h"
#include "engine/sampler/hard_negative_shortlist.h"
#include "engine/sampler/psl_batch.h"
#include "engine/text/corpus_rows.h"
#include "engine/sampler/query_batcher.h"
#include "engine/method/side_by_side.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/sampler/negatives_options.h"
#include "engine/sampler/psl_options.h"
#include "engine/method/unidec/unidec_options.h"

namespace xmc {
namespace {

/// A batch's PSL label pool and the encoder inputs of its queries and pool labels, built ahead of its step.
struct PreparedPsl final : PreparedRows {
  PslBatch pool;
  std::shared_ptr<const EncoderInput> queries;
  std::shared_ptr<const EncoderInput> labels;
};

/// The gradient a backward pass left in a leaf, or zeros where none reached it.
torch::Tensor gradient_or_zeros(const torch::Tensor& leaf) { return leaf.grad().defined() ? leaf.grad() : torch::zeros_like(leaf); }

UnidecSpace space_named(const std::string& name) {
  if (name == "clf") return UnidecSpace::Clf;
  if (name == "concat") return UnidecSpace::Concat;
  return UnidecSpace::De;
}

class UnidecMethod final : public GradientMethod {
 public:
  UnidecMethod(const ComponentConfig& config, bool with_classifiers)
      : config_(config), with_classifiers_(with_classifiers), loss_(&loss_entry(config.get<LossOptions>().kind)),
        loss_options_(config.get<LossOptions>()) {}

  std::string name() const override { return with_classifiers_ ? "unidec" : "depsl"; }
  std::vector<StageSpec> stages() const override { return {{.name = "encoder", .epoch_label = "epoch", .epochs = config_.run.epochs}}; }

  void build(const std::vector<std::string>& vocabulary_texts, const std::filesystem::path& run_dir) override {
    built_ = build_model(config_, vocabulary_texts, run_dir,
                         config_.get<PslOptions>().de_head == "normalize" ? EmbeddingHead::Normalize : EmbeddingHead::TanhLinear);
    UnidecModelOptions model{.with_classifiers = with_classifiers_, .dropout = config_.get<EncoderOptions>().dropout};
    if (with_classifiers_) {  // DEPSL has no classifiers: UniDEC's keys are not part of its runs
      const UnidecOptions& unidec = config_.get<UnidecOptions>();
      model.clf_head = unidec.clf_head;
      model.label_bias = unidec.label_bias == "learned";
      model.concat_weight = unidec.concat_weight;
    }
    model_ = UnidecModel(built_.model, std::move(model));
  }
  std::string description() const override {
    return built_.description + (with_classifiers_ ? ", DE and CLF heads + classifier table" : ", DE head");
  }
  const TextTokenizer& tokenizer() const override { return *built_.tokenizer; }
  torch::nn::Module& module() override { return *model_; }

  void begin_stage(const StageSpec&, TrainContext& context) override {
    if (!with_classifiers_ || model_->has_classifier_table()) return;  // resumed: the checkpoint filled Ψ
    model_->add_classifier_table(context.dataset.num_labels());
    torch::NoGradGuard no_grad;
    if (config_.get<UnidecOptions>().classifier_init == "label_text") {
      context.phase("UniDEC: classifiers from the labels' texts");
      const torch::Tensor texts = model_->embed_all(context.label_corpus, UnidecSpace::Clf, context.progress, "encoding labels for the classifiers");
      model_->classifier_table().copy_(texts.narrow(1, 0, model_->clf_dim()));  // without the bias column
    } else {
      model_->classifier_table().normal_(0.0, 1.0 / std::sqrt(static_cast<double>(model_->clf_dim())));
    }
  }

  std::vector<ParameterGroup> parameter_groups(const StageSpec&) override {
    std::vector<torch::Tensor> decay, no_decay, heads, table;
    for (const auto& item : model_->named_parameters()) {
      const std::string& name = item.key();
      if (name == "classifiers" || name == "classifier_bias") table.push_back(item.value());
      else if (name.rfind("dual_encoder.de_head.", 0) == 0 || name.rfind("clf_head.", 0) == 0) heads.push_back(item.value());
      else if (item.value().dim() <= 1 || name.find("norm") != std::string::npos || name.find("LayerNorm") != std::string::npos)
        no_decay.push_back(item.value());
      else decay.push_back(item.value());
    }
    std::vector<ParameterGroup> groups{{std::move(decay), config_.run.lr, config_.run.weight_decay},
                                       {std::move(no_decay), config_.run.lr, 0.0},
                                       {std::move(heads), config_.run.lr * config_.run.head_lr_scale, 0.0}};
    if (!table.empty()) groups.push_back({std::move(table), config_.get<UnidecOptions>().classifier_lr, 0.0, config_.get<UnidecOptions>().classifier_optimizer == "lazy_adamw"});
    return groups;
  }

  /// unidec.concat_holdout of the training queries with labels, drawn from the run's seed with its own stream
  /// (the run's other draws stay as without it) by a shuffle of our own (std::shuffle differs between standard
  /// libraries): the same rows on every rank, platform and resume.
  std::vector<std::int64_t> held_out_queries(std::span<const std::int64_t> labelled_rows) override {
    held_out_rows_.clear();
    if (with_classifiers_) held_out_rows_ = draw_held_out_rows(labelled_rows, config_.get<UnidecOptions>().concat_holdout, config_.run.seed, kConcatHoldoutStream);
    return held_out_rows_;
  }

  // Cut short, it leaves the shortlist window released (a refresh epoch) or as it was: a second call for the epoch
  // refreshes again from the same model, so the checkpoint between them needs neither.
  bool epoch_batches_can_stop() const override { return true; }

  std::vector<std::vector<std::int64_t>> epoch_batches(const StageSpec&, std::int64_t epoch, TrainContext& context) override {
    epoch_ = epoch;
    QueryBatcher& batcher = context.batcher;
    const NegativesOptions& negatives = config_.get<NegativesOptions>();
    const bool shortlists = negatives_kind(negatives.kind).draws_from_shortlists;
    const bool hard_yet = shortlists && epoch >= negatives.start_epoch;
    if (shortlists && !hard_yet)
      context.phase("no hard negatives until epoch " + std::to_string(negatives.start_epoch + 1) + " (hard.start_epoch " + std::to_string(negatives.start_epoch) +
                    "): the label pool holds the batch's sampled positives");
    const bool refreshes_shortlists = hard_yet && (!window_.ready() || epoch - window_.refreshed_at() >= config_.get<PslOptions>().refresh_every);
    // The shortlists' N x S ids (0.9 GB at 2.25M queries x 100) are not held while the next ones are searched,
    // nor while the queries are clustered.
    if (refreshes_shortlists) window_.release();
    // The training queries in the DE space, a slice at a time.
    const EpochQueryEncodings::Encoder encode_queries = [&](std::int64_t begin, std::int64_t end) {
      return model_->embed_all(corpus_rows(context.train_corpus, begin, end), UnidecSpace::De);
    };
    std::vector<std::vector<std::int64_t>> batches;
    // Encoded for the clustering, the queries are kept for this epoch's refresh too (the same model and space).
    std::optional<EpochQueryEncodings> encoded;
    {
      // The clustering's input is encoded afresh by the current encoder and dropped with this scope: kept from
      // the steps instead, it would be held all through training (1.15 GB at 2.25M queries).
      torch::Tensor embeddings;
      if (batcher.needs_embeddings(epoch)) {
        context.phase("encoding training queries");
        encoded.emplace(context.train_corpus.size(), encode_queries, refreshes_shortlists, context);
        embeddings = encoded->take_for_clustering();
        context.phase(batcher.refresh_phase(epoch));
      }
      batches = batcher.epoch_batches(epoch, embeddings, &context.progress);
    }
    if (refreshes_shortlists) {
      // The clustering's embeddings and temporaries (2.3 GB at 2.25M queries) go back to the system before the
      // refresh allocates its own: the heap keeps freed blocks for reuse, and the refresh's do not fit in theirs.
      return_freed_memory();
      context.phase("refreshing hard-negative shortlists");
      ShortlistReport report;
      // The labels are embedded a slice at a time as the search asks: an IVF search in bfloat16 never holds them in
      // float32 (1.3 GB at 1.3M labels x 256), the others gather them.
      const RowEmbeddings labels{.count = context.label_corpus.size(), .embed = [&](std::int64_t begin, std::int64_t end) {
                                   return model_->embed_all(corpus_rows(context.label_corpus, begin, end), UnidecSpace::De);
                                 }};
      // The training queries, read back from the clustering's encoding or embedded a slice at a time as the search
      // reaches them (2.3 GB held otherwise at 2.25M queries x 256).
      const RowEmbeddings queries = encoded ? encoded->for_refresh(encode_queries) : RowEmbeddings{.count = context.train_corpus.size(), .embed = encode_queries};
      torch::Tensor shortlist = hard_negative_shortlist(queries, labels, context.dataset.train_labels, config_.get<PslOptions>().shortlist,
                                                        context.progress, shortlist_search(negatives), &report);
      if (report.approximate) context.phase(report.describe(context.dataset.num_labels(), config_.get<PslOptions>().shortlist));
      window_.refresh(std::move(shortlist), epoch, context.label_pool_rng);  // shuffled in place, not beside a copy
    }
    return batches;
  }

  /// The pool (hard negatives drawn from the window, positives from the label-pool stream) and the encoder
  /// inputs: reads only the dataset, the corpora and the shortlist window, which changes between epochs.
  std::shared_ptr<PreparedBatch> prepare_step(const StageSpec&, std::span<const std::int64_t> batch, TrainContext& context) override {
    auto prepared = std::make_shared<PreparedPsl>();
    prepared->batch.assign(batch.begin(), batch.end());
    const torch::Tensor hard = negatives_kind(config_.get<NegativesOptions>().kind).draws_from_shortlists && window_.ready() ? window_.draw(batch, epoch_, config_.get<PslOptions>().hard_negatives) : torch::Tensor();
    prepared->pool = build_psl_batch(context.dataset.train_labels, batch, context.label_pool_rng,
                                     {.positives_per_query = config_.get<PslOptions>().positives,
                                      .pool_size = config_.get<PslOptions>().pool_size,
                                      .all_labels = negatives_kind(config_.get<NegativesOptions>().kind).scores_every_label},
                                     hard);
    prepared->queries = model_->prepare_input(context.train_corpus, batch);
    // With every label in the pool (negatives = all), the labels' inputs are built in the step: two batches'
    // worth of them would be held at once otherwise.
    if (!negatives_kind(config_.get<NegativesOptions>().kind).scores_every_label) prepared->labels = pool_label_input(prepared->pool, context);
    return prepared;
  }

  StepResult train_step(const StageSpec& stage, std::span<const std::int64_t> batch, const PreparedBatch* prepared_batch, TrainContext& context) override {
    std::shared_ptr<PreparedBatch> prepared_here;
    const auto& prepared = prepared_for<PreparedPsl>(
        batch, prepared_batch, prepared_here, [&] { return prepare_step(stage, batch, context); }, "UniDEC training step");
    const PslBatch& pool = prepared.pool;
    const torch::Device device = context.device;
    const torch::Tensor kept = pool.kept.to(device);
    const torch::Tensor pool_labels = pool.labels.to(device);
    const torch::Tensor mask = pool.positive_mask.to(device);
    const torch::Tensor pair_rows = pool.pair_rows.to(device), pair_columns = pool.pair_columns.to(device);
    const double q2l = config_.get<PslOptions>().directions == "both" ? 0.5 : 1.0;

    const std::shared_ptr<const EncoderInput> label_input = prepared.labels ? prepared.labels : pool_label_input(pool, context);
    // The queries the loss uses: usually all of them (a query is dropped only when none of its positives is pooled).
    const bool keeps_all = kept.size(0) == static_cast<std::int64_t>(batch.size());
    auto kept_rows = [&](const torch::Tensor& rows) { return keeps_all ? rows : rows.index_select(0, kept); };
    auto de_loss = [&](const torch::Tensor& queries_de, const torch::Tensor& labels_de) {
      return symmetric_loss(*loss_, torch::matmul(kept_rows(queries_de), labels_de.t()), mask, pair_rows, pair_columns, loss_options_, q2l);
    };
    auto classifier_loss = [&](const torch::Tensor& queries_clf) {
      const torch::Tensor clf_scores = torch::matmul(kept_rows(queries_clf), model_->classifiers(pool_labels).t());
      torch::Tensor loss = symmetric_loss(*loss_, clf_scores, mask, pair_rows, pair_columns, loss_options_, q2l);
      if (config_.get<UnidecOptions>().bce_weight > 0) loss = loss + config_.get<UnidecOptions>().bce_weight * bce_loss(clf_scores / config_.get<LossOptions>().temperature, mask, loss_options_);
      return loss;
    };
    const double lambda = with_classifiers_ ? config_.get<UnidecOptions>().lambda : 1.0;  // DEPSL: the DE loss alone

    // Encoders and heads run in this order (each may draw dropout masks from the generator).
    const torch::Tensor queries_encoded = model_->encode_input(*prepared.queries);
    if (!with_classifiers_ || !device.is_cpu() || !side_by_side_available()) {
      const torch::Tensor queries_de = model_->de(queries_encoded);
      torch::Tensor loss = de_loss(queries_de, model_->de(model_->encode_input(*label_input)));
      if (with_classifiers_) loss = lambda * loss + (1.0 - lambda) * classifier_loss(model_->query_vectors(queries_encoded, UnidecSpace::Clf));
      const double value = loss.item<double>();
      if (std::isfinite(value)) loss.backward();
      return {value};
    }

    // On the CPU the two heads' parts of the step run side by side (train/side_by_side.h): the graph is cut at
    // the encoder's outputs, each head's scores, loss and backward run on a thread of their own, and the
    // encoder's backward takes the sum of the heads' gradients. The forward passes of encoder and heads stay on
    // this thread, in the order above.
    const torch::Tensor de_queries_in = queries_encoded.detach().requires_grad_();
    const torch::Tensor clf_queries_in = queries_encoded.detach().requires_grad_();
    const torch::Tensor queries_de = model_->de(de_queries_in);
    const torch::Tensor labels_encoded = model_->encode_input(*label_input);
    const torch::Tensor de_labels_in = labels_encoded.detach().requires_grad_();
    const torch::Tensor labels_de = model_->de(de_labels_in);
    const torch::Tensor queries_clf = model_->query_vectors(clf_queries_in, UnidecSpace::Clf);
    torch::Tensor de_part, clf_part;
    run_side_by_side([&] { de_part = lambda * de_loss(queries_de, labels_de); }, [&] { clf_part = (1.0 - lambda) * classifier_loss(queries_clf); });
    const double value = (de_part + clf_part).item<double>();
    if (!std::isfinite(value)) return {value};
    run_side_by_side([&] { de_part.backward(); }, [&] { clf_part.backward(); });
    std::vector<torch::Tensor> roots, gradients;  // an encoder with nothing to train has no graph to go back through
    if (queries_encoded.requires_grad()) {
      roots.push_back(queries_encoded);
      gradients.push_back(gradient_or_zeros(de_queries_in).add_(gradient_or_zeros(clf_queries_in)));
    }
    if (labels_encoded.requires_grad()) {
      roots.push_back(labels_encoded);
      gradients.push_back(gradient_or_zeros(de_labels_in));
    }
    if (!roots.empty()) torch::autograd::backward(roots, gradients);
    return {value};
  }

  torch::Tensor encode_queries(const std::string& query_encoder, const TokenizedCorpus& corpus, Progress& progress, std::string_view task) override {
    return model_->embed_all(corpus, space_named(query_encoder), progress, task);
  }
  // The modes' query encoders share Φ: one encoder pass feeds all of them (evaluation's three modes).
  std::map<std::string, torch::Tensor> encode_queries_for(const std::vector<std::string>& query_encoders, const TokenizedCorpus& corpus,
                                                          Progress& progress, std::string_view task) override {
    std::vector<UnidecSpace> spaces;
    for (const std::string& name : query_encoders) spaces.push_back(space_named(name));
    std::vector<torch::Tensor> embedded = model_->embed_all(corpus, spaces, progress, task);
    std::map<std::string, torch::Tensor> out;
    for (std::size_t i = 0; i < query_encoders.size(); ++i) out.emplace(query_encoders[i], std::move(embedded[i]));
    return out;
  }
  torch::Tensor encode_query_rows(const std::string& query_encoder, const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) override {
    return model_->embed_rows(corpus, rows, space_named(query_encoder));
  }

  std::vector<InferenceMode> inference_modes(const TokenizedCorpus& labels, Progress& progress) override {
    InferenceMode de{.name = "de", .metric_prefix = "de", .query_encoder = "de", .training_space = true};
    if (!with_classifiers_ || !model_->has_classifier_table()) {
      de.label_matrix = model_->embed_all(labels, UnidecSpace::De, progress, "encoding labels");
      return {de};
    }
    torch::NoGradGuard no_grad;
    // One [L x (d + c)] matrix holds both spaces: concat ranks by all of it, de and clf by its column blocks (views,
    // which the exact search reads in place). At 1.3M labels three separate matrices took 5.3 GB, this one 2.7; the
    // labels' encodings are written straight into its first columns (1.3 GB more for a while otherwise).
    const std::int64_t d = model_->dim();
    const std::int64_t c = model_->classifier_columns();
    torch::Tensor joint = torch::empty({labels.size(), d + c}, torch::TensorOptions().device(model_->device()));
    model_->embed_all_into(labels, UnidecSpace::De, joint.narrow(1, 0, d), progress, "encoding labels");
    de.label_matrix = joint.narrow(1, 0, d);
    model_->write_classifiers(joint.narrow(1, d, c));
    InferenceMode concat{.name = "concat", .metric_prefix = "concat", .query_encoder = "concat", .label_matrix = joint};
    InferenceMode clf{.name = "clf", .metric_prefix = "clf", .query_encoder = "clf", .label_matrix = joint.narrow(1, d, c)};
    // An index over concat's own columns finds its top 10 poorly (the label bias column and the classifiers'
    // spread); the de and clf blocks' candidates, ranked exactly, find every mode's (bench/RESULTS.md).
    for (InferenceMode* mode : {&concat, &de, &clf}) mode->candidates_from = {"de", "clf"};
    return {concat, de, clf};
  }

  std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus& texts) override {
    // A label the run never saw has no trained classifier: its CLF-head encoding stands in for Ψ_l, as at
    // the start of training.
    const torch::Tensor de = model_->embed_all(texts, UnidecSpace::De);
    if (!with_classifiers_ || !model_->has_classifier_table()) return {de};
    torch::Tensor clf = model_->embed_all(texts, UnidecSpace::Clf);
    if (model_->has_label_bias()) clf.select(1, clf.size(1) - 1).zero_();  // a new label has no learned bias
    return {torch::cat({de, clf}, /*dim=*/1), de, clf};
  }
  std::vector<torch::Tensor> new_label_vectors_with_classifiers(const TokenizedCorpus& texts, const torch::Tensor& classifiers) override {
    const torch::Tensor de = model_->embed_all(texts, UnidecSpace::De);
    if (!with_classifiers_ || !model_->has_classifier_table()) return {de};
    const torch::Tensor clf = classifiers.to(de.device(), de.scalar_type());
    return {torch::cat({de, clf}, /*dim=*/1), de, clf};
  }

  void end_stage(const StageSpec&, TrainContext& context) override {
    // The stage has trained: its shortlists (0.9 GB at 2.25M queries x 100) are not held through the evaluation.
    window_.release();
    if (held_out_rows_.empty() || !model_->has_classifier_table()) return;
    // Only rank 0 evaluates and writes the checkpoint, so only its model needs w.
    if (context.distributed.is_main()) choose_concat_weight(context);
  }

  void save_state(torch::serialize::OutputArchive& archive) const override {
    window_.save(archive, "psl_shortlist");
    // A checkpoint inside an epoch resumes with that epoch's batches, without epoch_batches(): the epoch picks
    // the shortlist window's slice, so it travels with the checkpoint.
    archive.write("psl_epoch", torch::tensor({epoch_}, torch::kInt64));
    if (chosen_concat_weight_ >= 0) archive.write("concat_weight", torch::tensor({chosen_concat_weight_}, torch::kFloat64));
    archive.write("has_classifier_table", torch::tensor({static_cast<std::int64_t>(model_->has_classifier_table())}, torch::kInt64));
  }
  std::vector<torch::Tensor> idle_during_evaluation() const override { return {window_.shortlist()}; }
  void load_state(torch::serialize::InputArchive& archive, std::int64_t num_labels) override {
    window_.load(archive, "psl_shortlist");
    torch::Tensor epoch;
    if (archive.try_read("psl_epoch", epoch)) epoch_ = epoch.item<std::int64_t>();
    torch::Tensor weight;
    if (archive.try_read("concat_weight", weight)) {
      chosen_concat_weight_ = weight.item<double>();
      model_->set_concat_weight(chosen_concat_weight_);
    }
    torch::Tensor has;
    if (with_classifiers_ && archive.try_read("has_classifier_table", has) && has.item<std::int64_t>() != 0 && !model_->has_classifier_table())
      model_->add_classifier_table(num_labels, /*for_checkpoint=*/true);  // the model's tensors are read next
  }

 private:
  /// The encoder inputs of a pool's labels.
  std::shared_ptr<const EncoderInput> pool_label_input(const PslBatch& pool, const TrainContext& context) const {
    const std::int64_t* ids = pool.labels.data_ptr<std::int64_t>();
    return model_->prepare_input(context.label_corpus, std::vector<std::int64_t>(ids, ids + pool.labels.numel()));
  }

  /// Scores w = 0, 0.1, ..., 1 on the held-out queries and keeps the best (of equal ones, the nearest to
  /// unidec.concat_weight).
  void choose_concat_weight(TrainContext& context) {
    context.phase("UniDEC: choosing the concat weight on " + std::to_string(held_out_rows_.size()) + " held-out training queries");
    torch::NoGradGuard no_grad;
    const torch::Tensor label_de = model_->embed_all(context.label_corpus, UnidecSpace::De, context.progress, "encoding labels");
    const torch::Tensor classifiers = model_->classifiers();
    const std::int64_t c = model_->clf_dim();
    const torch::Tensor label_clf = classifiers.narrow(1, 0, c);
    const torch::Tensor bias = model_->has_label_bias() ? classifiers.select(1, c).contiguous() : torch::Tensor();
    std::vector<double> grid;
    for (int i = 0; i <= 10; ++i) grid.push_back(i / 10.0);
    ConcatWeightTally tally(grid);
    const CsrMatrix& labels = context.dataset.train_labels;
    // [chunk x L] float score matrices of the memory budget's share at most (32 MB at 512 MB), as many queries as
    // that allows up to 1024.
    const std::int64_t entries = memory_budget_part(memory_share::kUnidecScores) / static_cast<std::int64_t>(sizeof(float));
    const auto chunk = static_cast<std::size_t>(std::clamp<std::int64_t>(entries / std::max<std::int64_t>(labels.cols, 1), 1, 1024));
    context.progress.start("scoring held-out queries", static_cast<std::int64_t>(held_out_rows_.size()));
    for (std::size_t start = 0; start < held_out_rows_.size(); start += chunk) {
      const std::span<const std::int64_t> rows(held_out_rows_.data() + start, std::min(chunk, held_out_rows_.size() - start));
      const torch::Tensor queries_de = model_->embed_rows(context.train_corpus, rows, UnidecSpace::De);
      const torch::Tensor queries_clf = model_->embed_rows(context.train_corpus, rows, UnidecSpace::Clf).narrow(1, 0, c);
      torch::Tensor positives = torch::zeros({static_cast<std::int64_t>(rows.size()), labels.cols}, torch::kBool);
      auto mark = positives.accessor<bool, 2>();
      for (std::size_t i = 0; i < rows.size(); ++i)
        for (const std::int32_t label : labels.row_indices(rows[i])) mark[static_cast<std::int64_t>(i)][label] = true;
      tally.add(torch::matmul(queries_de, label_de.t()), torch::matmul(queries_clf, label_clf.t()), bias, positives.to(label_de.device()));
      context.progress.update(static_cast<std::int64_t>(start + rows.size()));
    }
    context.progress.finish();
    chosen_concat_weight_ = tally.best(config_.get<UnidecOptions>().concat_weight);
    model_->set_concat_weight(chosen_concat_weight_);
    context.chose("unidec.concat_weight", chosen_concat_weight_);
    char chosen[16];
    std::snprintf(chosen, sizeof chosen, "%.1f", chosen_concat_weight_);
    context.phase(std::string("UniDEC: concat weight ") + chosen + " (mean P@1 + P@3 + P@5 of " + std::to_string(tally.queries()) +
                  " held-out training queries by w — " + tally.curve(1) + ")");
  }

  ComponentConfig config_;
  bool with_classifiers_;
  const LossEntry* loss_;  ///< the config's loss (registered: lives as long as the program)
  LossOptions loss_options_;
  BuiltModel built_;
  UnidecModel model_{nullptr};
  HardNegativeWindow window_;
  std::int64_t epoch_ = 0;  ///< the epoch whose batches are being trained (picks the shortlist window's slice)
  std::vector<std::int64_t> held_out_rows_;   ///< training queries kept out of training (unidec.concat_holdout), ascending
  double chosen_concat_weight_ = -1;          ///< w chosen on them (-1: none chosen, the config's w applies)
};

}  // namespace

std::unique_ptr<Method> make_unidec_method(const ComponentConfig& config) { return std::make_unique<UnidecMethod>(config, true); }
std::unique_ptr<Method> make_depsl_method(const ComponentConfig& config) { return std::make_unique<UnidecMethod>(config, false); }

}  // namespace xmc
