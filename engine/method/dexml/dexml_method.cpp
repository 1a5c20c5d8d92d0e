// DEXML (decoupled softmax): one encoder stage that trains the shared encoder and DE head; inference by
// the unit embeddings of queries and labels. The loss, negatives and batching come from the config
// (dual_encoder_training.h).
#include "engine/method/dexml/dexml_options.h"
#include "engine/method/dual_encoder_training.h"
#include "engine/method/held_out_queries.h"
#include "engine/method/method_registry.h"

namespace xmc {
namespace {

class DexmlMethod final : public GradientMethod {
 public:
  explicit DexmlMethod(const ComponentConfig& config) : config_(config), training_(config_) {}

  std::string name() const override { return "dexml"; }
  std::vector<StageSpec> stages() const override { return {{.name = "encoder", .epoch_label = "epoch", .epochs = config_.run.epochs}}; }

  void build(const std::vector<std::string>& vocabulary_texts, const std::filesystem::path& run_dir) override {
    built_ = build_model(config_, vocabulary_texts, run_dir,
                         config_.get<DexmlOptions>().head == "normalize" ? EmbeddingHead::Normalize : EmbeddingHead::TanhLinear);
  }
  std::string description() const override { return built_.description; }
  const TextTokenizer& tokenizer() const override { return *built_.tokenizer; }
  torch::nn::Module& module() override { return *built_.model; }

  /// holdout.share of the labelled training queries, never trained on: an xrlinear run fused with this one chooses its weight there.
  std::vector<std::int64_t> held_out_queries(std::span<const std::int64_t> labelled_rows) override {
    return draw_held_out_rows(labelled_rows, config_.get<HeldOutOptions>().share, config_.run.seed, kConcatHoldoutStream);
  }

  void begin_stage(const StageSpec&, TrainContext&) override {}
  void end_stage(const StageSpec&, TrainContext&) override { training_.release_shortlist(); }
  bool splits_batch_across_ranks(const StageSpec&) const override { return true; }
  std::vector<ParameterGroup> parameter_groups(const StageSpec&) override { return training_.parameter_groups(built_.model); }
  std::vector<std::vector<std::int64_t>> epoch_batches(const StageSpec&, std::int64_t epoch, TrainContext& context) override {
    return training_.epoch_batches(built_.model, epoch, context);
  }
  std::shared_ptr<PreparedBatch> prepare_step(const StageSpec&, std::span<const std::int64_t> batch, TrainContext& context) override {
    return training_.prepare(built_.model, batch, context);
  }
  StepResult train_step(const StageSpec&, std::span<const std::int64_t> batch, const PreparedBatch* prepared, TrainContext& context) override {
    return training_.step(built_.model, batch, prepared, context);
  }

  torch::Tensor encode_queries(const std::string&, const TokenizedCorpus& corpus, Progress& progress, std::string_view task) override {
    return built_.model->embed_all(corpus, progress, task);
  }
  torch::Tensor encode_query_rows(const std::string&, const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) override {
    return built_.model->embed_rows(corpus, rows);
  }
  std::vector<InferenceMode> inference_modes(const TokenizedCorpus& labels, Progress& progress) override {
    return {{.name = "embedding",
             .metric_prefix = "emb",
             .query_encoder = "embedding",
             .label_matrix = built_.model->embed_all(labels, progress, "encoding labels"),
             .training_space = true}};
  }
  std::vector<torch::Tensor> new_label_vectors(const TokenizedCorpus& texts) override { return {built_.model->embed_all(texts)}; }

  void save_state(torch::serialize::OutputArchive& archive) const override { training_.save_state(archive); }
  void load_state(torch::serialize::InputArchive& archive, std::int64_t) override { training_.load_state(archive); }
  std::vector<torch::Tensor> idle_during_evaluation() const override { return {training_.shortlist()}; }

 private:
  ComponentConfig config_;
  DualEncoderTraining training_;
  BuiltModel built_;
};

}  // namespace

std::unique_ptr<Method> make_dexml_method(const ComponentConfig& config) { return std::make_unique<DexmlMethod>(config); }

}  // namespace xmc
