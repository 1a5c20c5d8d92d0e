// NGAME (negative-mining-aware mini-batching). Stage M1 trains the Siamese encoder on clustered batches
// (the curriculum and loss come from the config: triplet-OHNM in the presets); stage M4 freezes the
// encoder and learns classifiers w_l = normalize(Φ(z_l) + η_l) on the same clustered batches, with the
// union of the batch's positives as the label pool. Inference by classifiers, embeddings, or their fusion.
//
// Embeddings are the encoder's output L2-normalised, as in NGAME's code — no DE head. With the
// Tanh(Linear) head, triplet-OHNM collapsed every embedding onto one direction within the first ~20 steps
// (all query-label cosines 0.998-0.9999, the loss stuck at the margin) and never recovered; without it the
// score spread stays ~0.1 and M1 alone beats DEXML at equal epochs on Bibtex. Runs made with the head
// (checkpoints without the "embedding_head" state) are rebuilt with it when loaded.
#include "engine/data/dataset.h"
#include "engine/method/dual_encoder_training.h"
#include "engine/method/held_out_queries.h"
#include "engine/method/method_registry.h"
#include "engine/sampler/label_pool.h"
#include "engine/sampler/query_batcher.h"
#include "engine/method/ngame/ngame_options.h"

namespace xmc {
namespace {

class NgameMethod final : public GradientMethod {
 public:
  explicit NgameMethod(const ComponentConfig& config) : config_(config), encoder_training_(config_) {}

  std::string name() const override { return "ngame"; }
  std::vector<StageSpec> stages() const override {
    std::vector<StageSpec> stages{{.name = "m1", .epoch_label = "M1 epoch", .epochs = config_.run.epochs}};
    // M4 epochs are cheap next to an evaluation, and NGAME's recipe trains the classifiers unclipped.
    if (config_.get<NgameOptions>().m4_epochs > 0)
      stages.push_back({.name = "m4", .epoch_label = "M4 epoch", .epochs = config_.get<NgameOptions>().m4_epochs, .loss_series = "m4_loss",
                        .clip_gradients = false, .evaluate_between_epochs = false});
    return stages;
  }

  void build(const std::vector<std::string>& vocabulary_texts, const std::filesystem::path& run_dir) override {
    run_dir_ = run_dir;
    built_ = build_model(config_, vocabulary_texts, run_dir, EmbeddingHead::Normalize);
  }
  std::string description() const override { return built_.description; }
  const TextTokenizer& tokenizer() const override { return *built_.tokenizer; }
  torch::nn::Module& module() override { return *built_.model; }

  /// holdout.share of the labelled training queries, never trained on: an xrlinear run fused with this one chooses its weight there.
  std::vector<std::int64_t> held_out_queries(std::span<const std::int64_t> labelled_rows) override {
    return draw_held_out_rows(labelled_rows, config_.get<HeldOutOptions>().share, config_.run.seed, kConcatHoldoutStream);
  }

  void begin_stage(const StageSpec& stage, TrainContext& context) override {
    if (stage.name != "m4") return;
    context.phase("NGAME M4: encoding with the frozen encoder");
    frozen_queries_ = built_.model->embed_all(context.train_corpus, context.progress, "NGAME M4: encoding training queries");
    frozen_labels_ = built_.model->embed_all(context.label_corpus, context.progress, "NGAME M4: encoding labels");
    if (!built_.model->has_classifiers()) built_.model->add_classifiers(context.dataset.num_labels());
  }

  /// M1 gathers the batch's embeddings over the ranks (the in-batch pool is the whole batch's); M4 trains
  /// classifiers on frozen embeddings, batch shards as batches of their own.
  bool splits_batch_across_ranks(const StageSpec& stage) const override { return stage.name == "m1"; }

  std::vector<ParameterGroup> parameter_groups(const StageSpec& stage) override {
    if (stage.name == "m4") return {{{built_.model->classifier_residuals()}, config_.run.lr * config_.run.head_lr_scale, 0.0}};
    return encoder_training_.parameter_groups(built_.model);
  }

  std::vector<std::vector<std::int64_t>> epoch_batches(const StageSpec& stage, std::int64_t epoch, TrainContext& context) override {
    if (stage.name == "m1") return encoder_training_.epoch_batches(built_.model, epoch, context);
    // M4: clusters of the frozen query embeddings at the curriculum's last cluster size.
    return context.batcher.epoch_batches(config_.run.epochs, frozen_queries_, &context.progress);
  }

  std::shared_ptr<PreparedBatch> prepare_step(const StageSpec& stage, std::span<const std::int64_t> batch, TrainContext& context) override {
    if (stage.name == "m1") return encoder_training_.prepare(built_.model, batch, context);
    return nullptr;  // M4's step is small products on frozen embeddings
  }
  StepResult train_step(const StageSpec& stage, std::span<const std::int64_t> batch, const PreparedBatch* prepared,
                        TrainContext& context) override {
    if (stage.name == "m1") return encoder_training_.step(built_.model, batch, prepared, context);
    const LabelPool pool = build_label_pool(context.dataset.train_labels, batch, context.label_pool_rng, {.all_positives = true});
    const torch::Tensor pool_ids = torch::tensor(pool.labels, torch::kInt64).to(context.device);
    const torch::Tensor batch_ids = torch::tensor(std::vector<std::int64_t>(batch.begin(), batch.end()), torch::kInt64).to(context.device);
    const torch::Tensor w = built_.model->classifiers(frozen_labels_.index_select(0, pool_ids), pool_ids);
    // M4 uses M1's loss (NGAME trains its classifiers with the same triplet loss).
    const torch::Tensor loss = encoder_training_.loss(torch::matmul(frozen_queries_.index_select(0, batch_ids), w.t()),
                                                      pool.positive_mask.to(context.device));
    const double value = loss.item<double>();
    if (std::isfinite(value)) loss.backward();
    return {value};
  }

  torch::Tensor encode_queries(const std::string&, const TokenizedCorpus& corpus, Progress& progress, std::string_view task) override {
    return built_.model->embed_all(corpus, progress, task);
  }
  torch::Tensor encode_query_rows(const std::string&, const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) override {
    return built_.model->embed_rows(corpus, rows);
  }

  std::vector<InferenceMode> inference_modes(const TokenizedCorpus& labels, Progress& progress) override {
    InferenceMode embedding{.name = "embedding",
                            .metric_prefix = "emb",
                            .query_encoder = "embedding",
                            .label_matrix = built_.model->embed_all(labels, progress, "encoding labels"),
                            .training_space = true};
    if (!built_.model->has_classifiers()) return {embedding};  // during M1
    torch::NoGradGuard no_grad;
    const torch::Tensor classifiers = built_.model->classifiers(embedding.label_matrix);
    InferenceMode fused{.name = "fused",
                        .metric_prefix = "fused",
                        .query_encoder = "embedding",
                        .label_matrix = XmcModelImpl::fuse(classifiers, embedding.label_matrix, config_.get<NgameOptions>().fusion)};
    InferenceMode classifier{.name = "classifier", .metric_prefix = "clf", .query_encoder = "embedding", .label_matrix = classifiers};
    return {fused, embedding, classifier};
  }

  std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus& texts) override {
    // Without trained residuals a new label's classifier is its embedding, and so is its fused vector
    // (w·Φ(z) + (1-w)·Φ(z)).
    const torch::Tensor embedding = built_.model->embed_all(texts);
    if (!built_.model->has_classifiers()) return {embedding};
    return {embedding, embedding, embedding};
  }
  std::vector<torch::Tensor> new_label_vectors_with_classifiers(const TokenizedCorpus& texts, const torch::Tensor& classifiers) override {
    const torch::Tensor embedding = built_.model->embed_all(texts);
    if (!built_.model->has_classifiers()) return {embedding};
    const torch::Tensor w = classifiers.to(embedding.device(), embedding.scalar_type());
    return {XmcModelImpl::fuse(w, embedding, config_.get<NgameOptions>().fusion), embedding, w};
  }

  void save_state(torch::serialize::OutputArchive& archive) const override {
    encoder_training_.save_state(archive);
    archive.write("has_classifiers", torch::tensor({static_cast<std::int64_t>(built_.model->has_classifiers())}, torch::kInt64));
    archive.write("embedding_head", torch::tensor({static_cast<std::int64_t>(built_.model->head())}, torch::kInt64));
  }
  std::vector<torch::Tensor> idle_during_evaluation() const override { return {encoder_training_.shortlist()}; }
  void load_state(torch::serialize::InputArchive& archive, std::int64_t num_labels) override {
    encoder_training_.load_state(archive);
    torch::Tensor head;
    const auto saved = archive.try_read("embedding_head", head) ? static_cast<EmbeddingHead>(head.item<std::int64_t>()) : EmbeddingHead::TanhLinear;
    if (saved != built_.model->head()) built_ = build_model(config_, {}, run_dir_, saved);  // the vocabulary is in run_dir by now
    torch::Tensor has;
    if (archive.try_read("has_classifiers", has) && has.item<std::int64_t>() != 0 && !built_.model->has_classifiers())
      built_.model->add_classifiers(num_labels);
  }

 private:
  ComponentConfig config_;
  DualEncoderTraining encoder_training_;
  BuiltModel built_;
  std::filesystem::path run_dir_;
  torch::Tensor frozen_queries_, frozen_labels_;  ///< M4: embeddings of the frozen encoder
};

}  // namespace

std::unique_ptr<Method> make_ngame_method(const ComponentConfig& config) { return std::make_unique<NgameMethod>(config); }

}  // namespace xmc
