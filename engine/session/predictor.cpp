#include "engine/session/predictor.h"

#include <ATen/Parallel.h>

#include <map>
#include <thread>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/text_lines.h"
#include "engine/index/exact_search.h"
#include "engine/method/xmc_model.h"
#include "engine/store/run_store.h"
#include "engine/train/checkpoint.h"
#include "engine/train/evaluation_pass.h"
#include "engine/train/training_run.h"

namespace xmc {

struct Predictor::Impl {
  std::int64_t run_id = 0;
  TrainConfig config;
  BuiltModel built;
  std::vector<std::string> labels;
  std::vector<std::string> modes;
  std::map<std::string, torch::Tensor> label_matrices;  // mode -> [L x d]

  /// The label matrix of `mode` ("" = the default mode); ConfigError naming the known modes otherwise.
  const torch::Tensor& label_matrix(const std::string& mode) const;
};

Predictor::Predictor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

Predictor Predictor::open(const std::filesystem::path& db_path, std::int64_t run_id, const std::string& device, Progress& progress) {
  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  RunStore store(db_path);
  const RunInfo info = store.get_run(run_id);
  auto impl = std::make_unique<Impl>();
  impl->run_id = run_id;
  impl->config = parse_train_config(info.config_json, "run " + std::to_string(run_id) + " config");
  if (!device.empty()) impl->config.device = device;
  const auto run_dir = TrainingRun::run_directory(db_path, run_id);
  const auto checkpoint = run_dir / "checkpoint.pt";
  if (!std::filesystem::exists(checkpoint))
    throw ConfigError("run " + std::to_string(run_id) + " has no checkpoint yet (" + checkpoint.string() + ")");
  impl->labels = read_text_lines(impl->config.dataset / dataset_files::kLabelText);
  std::vector<std::string> vocabulary_texts;
  if (impl->config.encoder_type == "bow" && !std::filesystem::exists(run_dir / "vocab.txt"))
    throw InputError((run_dir / "vocab.txt").string(), "no such file: the run's vocabulary is missing");
  impl->built = build_model(impl->config, vocabulary_texts, run_dir);
  const TrainingState state = read_checkpoint_state(checkpoint);
  if (state.has_classifiers) impl->built.model->add_classifiers(static_cast<std::int64_t>(impl->labels.size()));
  load_checkpoint(checkpoint, *impl->built.model, nullptr);
  impl->built.model->eval();

  const TokenizedCorpus label_corpus = impl->built.tokenizer->tokenize(impl->labels);
  torch::Tensor embeddings = impl->built.model->embed_all(label_corpus, progress, "search index: encoding labels");
  impl->modes.push_back("embedding");
  impl->label_matrices["embedding"] = embeddings;
  if (impl->built.model->has_classifiers()) {
    torch::NoGradGuard no_grad;
    const torch::Tensor classifiers = impl->built.model->classifiers(embeddings);
    impl->label_matrices["classifier"] = classifiers;
    impl->label_matrices["fused"] = XmcModelImpl::fuse(classifiers, embeddings, impl->config.ngame_fusion);
    impl->modes = {"fused", "embedding", "classifier"};
  }
  return Predictor(std::move(impl));
}

const std::vector<std::string>& Predictor::modes() const { return impl_->modes; }
const std::string& Predictor::default_mode() const { return impl_->modes.front(); }
std::int64_t Predictor::num_labels() const { return static_cast<std::int64_t>(impl_->labels.size()); }
const std::vector<std::string>& Predictor::label_texts() const { return impl_->labels; }
std::int64_t Predictor::run_id() const { return impl_->run_id; }

std::int64_t Predictor::add_label(const std::string& text) {
  const TokenizedCorpus corpus = impl_->built.tokenizer->tokenize({text});
  torch::Tensor embedding = impl_->built.model->embed_all(corpus);  // [1 x d], unit norm
  // Without trained residuals a new label's classifier is its embedding, and so is its fused vector
  // (w·Φ(z) + (1-w)·Φ(z)).
  for (auto& [mode, matrix] : impl_->label_matrices) matrix = torch::cat({matrix, embedding.to(matrix.device())});
  impl_->labels.push_back(text);
  return num_labels() - 1;
}

const torch::Tensor& Predictor::Impl::label_matrix(const std::string& mode) const {
  const std::string& m = mode.empty() ? modes.front() : mode;
  const auto it = label_matrices.find(m);
  if (it == label_matrices.end()) {
    std::string known;
    for (const auto& k : modes) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError("mode: \"" + m + "\" is not an inference mode of run " + std::to_string(run_id) + " (" + known + ")");
  }
  return it->second;
}

LabelRank Predictor::rank_of(const std::string& text, std::int64_t label, const std::string& mode) const {
  const torch::Tensor& matrix = impl_->label_matrix(mode);
  if (label < 0 || label >= num_labels())
    throw ConfigError("label " + std::to_string(label) + " is out of range: run " + std::to_string(impl_->run_id) + " has " +
                      std::to_string(num_labels()) + " labels");
  torch::NoGradGuard no_grad;
  const torch::Tensor query = impl_->built.model->embed_all(impl_->built.tokenizer->tokenize({text}));  // [1 x d]
  // The same products, key chunk by key chunk, that predict() ranks by, so ranks agree with its order.
  const torch::Tensor q = query.to(matrix.device(), matrix.scalar_type());
  const std::int64_t key_chunk = ExactSearchOptions{}.key_chunk;
  std::vector<torch::Tensor> parts;
  for (std::int64_t k0 = 0; k0 < matrix.size(0); k0 += key_chunk)
    parts.push_back(chunk_inner_products(q, matrix.narrow(0, k0, std::min(key_chunk, matrix.size(0) - k0))).reshape({-1}));
  const torch::Tensor scores = torch::cat(parts).to(torch::kCPU, torch::kFloat32);
  const float own = scores[label].item<float>();
  const std::int64_t better = (scores > own).sum().item<std::int64_t>() + (scores.narrow(0, 0, label) == own).sum().item<std::int64_t>();
  return {better + 1, own};
}

std::vector<std::vector<LabelScore>> Predictor::predict(const std::vector<std::string>& texts, std::int64_t top,
                                                        const std::string& mode) const {
  const torch::Tensor& matrix = impl_->label_matrix(mode);
  const TokenizedCorpus corpus = impl_->built.tokenizer->tokenize(texts);
  torch::Tensor queries = impl_->built.model->embed_all(corpus);
  const RankedPredictions ranked = rank_labels(queries, matrix, std::min<std::int64_t>(top, num_labels()));
  std::vector<std::vector<LabelScore>> out(texts.size());
  const std::int64_t k = ranked.labels.size(1);
  const auto* ids = ranked.labels.data_ptr<std::int64_t>();
  const auto* scores = ranked.scores.data_ptr<float>();
  for (std::size_t i = 0; i < texts.size(); ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      const auto label = ids[static_cast<std::int64_t>(i) * k + j];
      if (label < 0) break;
      out[i].push_back({label, scores[static_cast<std::int64_t>(i) * k + j], impl_->labels[static_cast<std::size_t>(label)]});
    }
  return out;
}

}  // namespace xmc
