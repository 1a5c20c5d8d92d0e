#include "engine/session/predictor.h"

#include "engine/config/component_config.h"
#include "engine/model/cpu_thread_policy.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/method/checkpoint.h"
#include "engine/core/utf8.h"
#include "engine/data/dataset.h"
#include "engine/index/rag_options.h"
#include "engine/index/index_factory.h"
#include "engine/method/trained_run.h"
#include "engine/records/chosen_settings.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/rank/mode_searcher.h"
#include "engine/rank/retrieval_augmented_search.h"
#include "engine/rank/saved_label_index.h"
#include "engine/config/component_info.h"
#include "engine/config/train_config.h"

namespace xmc {

struct Predictor::Impl {
  TrainedRun run;
  std::unique_ptr<RunStore> store;        ///< kept open: adding a label is a few milliseconds, opening a store is not
  std::optional<TrainedRun> synthesizer;  ///< the IRENE run built on this run, when there is one
  std::string synthesized_by = "embedding";
  std::string index_spec;
  std::vector<std::string> mode_names;    ///< primary first
  /// One per mode, in mode_names' order (engine/rank): with rag.use on, the last is the retrieval-augmented one.
  std::vector<std::unique_ptr<LabelSearcher>> searchers;
  CsrMatrix rag_train_labels;  ///< the training queries' labels the retrieval-augmented mode reads

  /// The position of `mode` ("" = the primary); ConfigError naming the known modes otherwise.
  std::size_t mode_index(const std::string& mode) const {
    if (mode.empty()) return 0;
    for (std::size_t m = 0; m < mode_names.size(); ++m)
      if (mode_names[m] == mode) return m;
    std::string known;
    for (const auto& k : mode_names) known += (known.empty() ? "" : ", ") + k;
    throw ConfigError("mode: \"" + mode + "\" is not an inference mode of run " + std::to_string(run.run_id) + " (" + known + ")");
  }

  /// Every mode's vectors of new labels: IRENE's classifiers where an IRENE run is built on this one.
  std::vector<torch::Tensor> new_label_vectors(const std::vector<std::string>& texts) const {
    torch::NoGradGuard no_grad;
    const TokenizedCorpus corpus = run.method->tokenizer().tokenize(texts);
    if (!synthesizer) return run.method->new_label_vectors(corpus);
    LabelSynthesis* synthesis = synthesizer->method->label_synthesis();
    if (synthesis == nullptr)
      throw Error("run " + std::to_string(synthesizer->run_id) + " (" + synthesizer->method->name() + ") builds on run " +
                  std::to_string(run.run_id) + " but synthesizes no classifiers");
    const torch::Tensor classifiers = synthesis->synthesized_classifiers(synthesizer->method->tokenizer().tokenize(texts));
    return run.method->new_label_vectors_with_classifiers(corpus, classifiers);
  }

  void insert(const std::vector<std::string>& texts) {
    if (texts.empty()) return;
    insert(texts, new_label_vectors(texts));
  }

  /// Adds labels whose vectors (one matrix per method mode, from new_label_vectors()) are computed already.
  void insert(const std::vector<std::string>& texts, const std::vector<torch::Tensor>& vectors) {
    if (texts.empty()) return;
    const auto first = static_cast<std::int64_t>(run.label_texts.size());
    for (std::size_t m = 0; m < vectors.size() && m < searchers.size(); ++m) searchers[m]->add(vectors[m], first);
    run.label_texts.insert(run.label_texts.end(), texts.begin(), texts.end());
  }

  /// `corpus`'s rows as mode `m`'s searcher reads them: with their vectors under its query encoder, if it has one.
  SearchQueries queries_of(std::size_t m, const TokenizedCorpus& corpus) const {
    SearchQueries queries{.texts = &corpus, .begin = 0, .end = corpus.size()};
    const std::string& encoder = searchers[m]->query_encoder();
    if (!encoder.empty()) queries.vectors = run.method->encode_queries(encoder, corpus, silent_progress(), "encoding queries");
    return queries;
  }

  void check_label(std::int64_t label) const {
    if (label < 0 || label >= static_cast<std::int64_t>(run.label_texts.size()))
      throw ConfigError("label " + std::to_string(label) + " is out of range: run " + std::to_string(run.run_id) + " has " +
                        std::to_string(run.label_texts.size()) + " labels");
  }

  /// Throws ConfigError when mode `m` ranks by itself and so has no vectors.
  void check_has_vectors(std::size_t m) const {
    if (searchers[m]->query_encoder().empty())
      throw ConfigError("mode " + mode_names[m] + " of run " + std::to_string(run.run_id) + " ranks labels by itself (" + run.method->name() +
                        "): it has no label or query vectors");
  }

  /// With rag.use on, the mode "rag" after the method's, built on its training-space mode: the training queries'
  /// vectors come from rag-train-queries.pt in the run's folder while it is newer than the checkpoint, else are
  /// encoded (progress reported) and saved there.
  void add_rag_mode(const std::vector<InferenceMode>& modes, const std::filesystem::path& run_dir, std::filesystem::file_time_type checkpoint_time,
                    Progress& progress) {
    const RagOptions& options = run.config.get<RagOptions>();
    if (options.use != "on" || modes.empty()) return;
    const auto base_mode = std::find_if(modes.begin(), modes.end(), [](const InferenceMode& mode) { return mode.training_space; });
    const LabelSearcher& base = *searchers[base_mode == modes.end() ? 0 : static_cast<std::size_t>(base_mode - modes.begin())];
    // A mode of a label subset (IRENE's zero-shot) has no training queries to lean on; one that ranks by itself
    // (xrlinear's tree) has no embeddings to retrieve with.
    if (!base.searches_every_label_vector()) return;
    const Dataset dataset = load_dataset(run.config.dataset, {.load_features = false});
    rag_train_labels = dataset.train_labels;
    const auto saved = run_dir / "rag-train-queries.pt";
    torch::Tensor vectors;
    std::error_code error;
    if (std::filesystem::exists(saved, error) && std::filesystem::last_write_time(saved, error) > checkpoint_time) {
      try {
        check_torch_archive(saved);  // a cache, but read by LibTorch: damage it cannot survive is refused first
        torch::load(vectors, saved.string());
        if (vectors.dim() != 2 || vectors.size(0) != dataset.num_train() || vectors.size(1) != base.label_vectors().size(1)) vectors = torch::Tensor();
      } catch (const std::exception&) {
        vectors = torch::Tensor();  // damaged: encoded and saved again below
      }
    }
    if (!vectors.defined()) {
      torch::NoGradGuard no_grad;
      vectors = run.method->encode_queries(base.query_encoder(), run.method->tokenizer().tokenize(dataset.train_text), progress,
                                           "rag: encoding training queries").to(torch::kCPU, torch::kFloat).contiguous();
      try {
        torch::save(vectors, saved.string());
      } catch (const std::exception&) {
        // A store folder we may not write to: encoded again next time.
      }
    }
    // With rag.lambda_from held-out, the λ the run's last evaluation chose (a run never evaluated: the configured one).
    double lambda = options.lambda;
    if (options.lambda_from == "held-out")
      for (const ChosenSetting& chosen : chosen_settings(store->scalars_with_prefix(run.run_id, kChosenSettingPrefix)))
        if (chosen.key == "rag.lambda") lambda = chosen.value;
    searchers.push_back(std::make_unique<RetrievalAugmentedSearcher>(
        base, RetrievalAugmentation{.train_queries = vectors, .train_labels = &rag_train_labels, .top = options.top, .lambda = lambda,
                                    .temperature = options.temperature}));
    mode_names.push_back("rag");
  }

  /// Mode `m`'s top `top` labels of each of `queries`, best first.
  std::vector<std::vector<LabelScore>> top_labels(std::size_t m, const SearchQueries& queries, std::int64_t top) const {
    std::vector<std::vector<LabelScore>> out(static_cast<std::size_t>(queries.rows()));
    if (top <= 0 || queries.rows() == 0) return out;
    const RankedPredictions ranked = searchers[m]->search(queries, top);
    const std::int64_t k = ranked.labels.size(1);
    const auto* ids = ranked.labels.data_ptr<std::int64_t>();
    const auto* scores = ranked.scores.data_ptr<float>();
    for (std::int64_t i = 0; i < queries.rows(); ++i)
      for (std::int64_t j = 0; j < k && ids[i * k + j] >= 0; ++j) {
        const std::int64_t label = ids[i * k + j];
        out[static_cast<std::size_t>(i)].push_back({label, scores[i * k + j], run.label_texts[static_cast<std::size_t>(label)]});
      }
    return out;
  }

  /// Where each of `labels` ranks in mode `m` for the one query of `query` (rank 0 for a label the mode does not rank).
  std::vector<LabelRank> ranks_of(std::size_t m, const SearchQueries& query, const std::vector<std::int64_t>& labels) const {
    std::vector<LabelRank> out;
    for (const LabelPlace& place : searchers[m]->places_of(query, labels)) out.push_back({place.rank, place.score});
    return out;
  }
};

Predictor::Predictor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::vector<float> Predictor::label_vectors(const std::string& mode, std::int64_t& dim) const {
  const std::size_t at = impl_->mode_index(mode);
  impl_->check_has_vectors(at);
  const torch::Tensor matrix = impl_->searchers[at]->label_vectors().to(torch::kCPU, torch::kFloat32).contiguous();
  dim = matrix.size(1);
  return {matrix.data_ptr<float>(), matrix.data_ptr<float>() + matrix.numel()};
}

std::vector<float> Predictor::query_vectors(const std::vector<std::string>& texts, const std::string& mode, std::int64_t& dim) const {
  torch::NoGradGuard no_grad;
  const std::size_t at = impl_->mode_index(mode);
  impl_->check_has_vectors(at);
  const TokenizedCorpus corpus = impl_->run.method->tokenizer().tokenize(texts);
  const torch::Tensor q = impl_->queries_of(at, corpus).vectors.to(torch::kCPU, torch::kFloat32).contiguous();
  dim = q.size(1);
  return {q.data_ptr<float>(), q.data_ptr<float>() + q.numel()};
}

std::vector<std::int64_t> Predictor::known_token_counts(const std::vector<std::string>& texts) const {
  const TextTokenizer& tokenizer = impl_->run.method->tokenizer();
  const TokenizedCorpus corpus = tokenizer.tokenize(texts);
  std::vector<std::int64_t> counts(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) counts[i] = tokenizer.known_tokens(corpus.tokens(static_cast<std::int64_t>(i)));
  return counts;
}
Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

Predictor Predictor::open(const std::filesystem::path& db_path, std::int64_t run_id, const std::string& device, Progress& progress,
                          const std::string& index_spec) {
  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  auto impl = std::make_unique<Impl>();
  impl->index_spec = index_spec.empty() ? "exact" : index_spec;
  check_index_spec(impl->index_spec);  // a typo fails before minutes of encoding
  // One store handle serves the run, the run an IRENE run is built on, and the labels added later.
  impl->store = std::make_unique<RunStore>(db_path);
  impl->run = load_trained_run(*impl->store, run_id, device);
  set_memory_budget_mb(impl->run.config.memory_mb);  // the run's budget for the temporaries of its searches
  use_cpu_threads(impl->run.method->module(), at::get_num_threads());
  const TokenizedCorpus labels = impl->run.label_corpus();
  std::vector<InferenceMode> modes;
  {
    torch::NoGradGuard no_grad;
    modes = impl->run.method->inference_modes(labels, progress);
  }
  // An approximate index is built once per run and mode, saved beside the checkpoint and reused while the
  // checkpoint is older than it; exact search reads the label matrices where they lie.
  const auto run_dir = run_directory(db_path, run_id);
  const auto checkpoint_time = std::filesystem::last_write_time(checkpoint_file(run_dir));
  for (const InferenceMode& mode : modes) {
    impl->mode_names.push_back(mode.name);
    LabelIndexMaker index_for;
    if (impl->index_spec != "exact")
      index_for = [&](const torch::Tensor& matrix) { return saved_label_index(impl->index_spec, matrix, mode.name, run_dir, checkpoint_time, progress); };
    impl->searchers.push_back(make_mode_searcher(mode, index_for));
  }
  impl->add_rag_mode(modes, run_dir, checkpoint_time, progress);
  if (method_info(impl->run.config.method).base_run) {
    impl->synthesized_by = impl->run.config.method;  // the run synthesizes its added labels' classifiers itself
  } else {
    // The newest completed run built on this one by a method that does (IRENE) synthesizes classifiers of added labels.
    // Only runs of such methods are read (the store finds them by the config's method).
    std::vector<std::string> builders;
    for (const MethodInfo& method : registered_method_infos())
      if (method.base_run) builders.push_back(method.name);
    for (const RunInfo& info : impl->store->runs_of_methods(builders)) {  // newest first
      if (info.status != RunStatus::Completed) continue;
      TrainConfig config;
      try {
        config = parse_train_config(info.config_json, "run " + std::to_string(info.id) + " config");
      } catch (const Error&) {
        continue;
      }
      const MethodInfo& method = method_info(config.method);
      if (!method.base_run || method.base_run(component_config(config)) != run_id) continue;
      impl->synthesizer = load_trained_run(*impl->store, info.id, device);
      impl->synthesized_by = config.method + " run " + std::to_string(info.id);
      break;
    }
  }
  std::vector<std::string> added;
  for (const AddedLabel& label : impl->store->added_labels(run_id)) added.push_back(label.text);
  impl->insert(added);
  return Predictor(std::move(impl));
}

const std::vector<std::string>& Predictor::modes() const { return impl_->mode_names; }
const std::string& Predictor::default_mode() const { return impl_->mode_names.front(); }
const std::string& Predictor::index_spec() const { return impl_->index_spec; }
std::int64_t Predictor::num_labels() const { return static_cast<std::int64_t>(impl_->run.label_texts.size()); }
const std::vector<std::string>& Predictor::label_texts() const { return impl_->run.label_texts; }
std::int64_t Predictor::run_id() const { return impl_->run.run_id; }

std::int64_t Predictor::add_label(const std::string& text) { return add_labels({text}); }

std::int64_t Predictor::add_labels(const std::vector<std::string>& texts) {
  const std::int64_t first = num_labels();
  std::vector<std::string> clean;
  std::unordered_map<std::string, std::int64_t> known;
  for (std::size_t l = 0; l < impl_->run.label_texts.size(); ++l) known.emplace(impl_->run.label_texts[l], static_cast<std::int64_t>(l));
  for (const std::string& text : texts) {
    std::string t = text;
    t.erase(0, t.find_first_not_of(" \t"));
    t.erase(t.find_last_not_of(" \t") + 1);
    if (t.empty()) throw ConfigError("label text: empty (give the new label's words, e.g. its name and description)");
    if (t.find_first_of("\n\r") != std::string::npos) throw ConfigError("label text: one line per label (got a line break in \"" + t.substr(0, 40) + "\")");
    if (!is_valid_utf8(t)) throw ConfigError("label text: not valid UTF-8 text");
    if (const auto it = known.find(t); it != known.end())
      throw ConfigError("label text: run " + std::to_string(run_id()) + " already has the label \"" + t + "\" (label " + std::to_string(it->second) + ")");
    known.emplace(t, first + static_cast<std::int64_t>(clean.size()));
    clean.push_back(std::move(t));
  }
  // Their vectors first: a method that cannot take new labels (xrlinear) refuses before anything is stored. Then
  // kept in the store: a label the store refuses is not half added.
  const std::vector<torch::Tensor> vectors = clean.empty() ? std::vector<torch::Tensor>{} : impl_->new_label_vectors(clean);
  for (const std::string& t : clean) impl_->store->add_added_label(run_id(), t, impl_->synthesized_by);
  impl_->insert(clean, vectors);
  return first;
}

const std::string& Predictor::synthesized_by() const { return impl_->synthesized_by; }

bool Predictor::fuses_images() const { return impl_->run.label_images != nullptr; }

std::vector<AddedLabel> Predictor::added_labels() const { return impl_->store->added_labels(run_id()); }

LabelRank Predictor::rank_of(const std::string& text, std::int64_t label, const std::string& mode) const {
  const std::size_t m = impl_->mode_index(mode);
  impl_->check_label(label);
  const LabelSearcher& searcher = *impl_->searchers[m];
  if (!searcher.ranks(label))
    throw ConfigError("label " + std::to_string(label) + " is not ranked in mode " + impl_->mode_names[m] + " of run " + std::to_string(run_id()) +
                      " (it ranks " + std::to_string(searcher.num_labels()) + " of the labels)");
  torch::NoGradGuard no_grad;
  const TokenizedCorpus corpus = impl_->run.method->tokenizer().tokenize({text});
  return impl_->ranks_of(m, impl_->queries_of(m, corpus), {label}).front();
}

SearchAnswer Predictor::search(const std::string& text, std::int64_t top, const std::vector<std::int64_t>& labels) const {
  for (const std::int64_t label : labels) impl_->check_label(label);
  torch::NoGradGuard no_grad;
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  SearchAnswer answer;
  // Every query encoder the modes use, in one call: a method whose encoders share a pass does it once.
  std::vector<std::string> encoders;
  for (const auto& searcher : impl_->searchers) {
    const std::string& encoder = searcher->query_encoder();
    if (!encoder.empty() && std::find(encoders.begin(), encoders.end(), encoder) == encoders.end()) encoders.push_back(encoder);
  }
  const auto encode_start = Clock::now();
  const TokenizedCorpus corpus = impl_->run.method->tokenizer().tokenize({text});
  const std::map<std::string, torch::Tensor> queries =
      encoders.empty() ? std::map<std::string, torch::Tensor>{}
                       : impl_->run.method->encode_queries_for(encoders, corpus, silent_progress(), "encoding the query");
  answer.encode_ms = ms_since(encode_start);
  for (std::size_t m = 0; m < impl_->searchers.size(); ++m) {
    const auto search_start = Clock::now();
    const std::string& encoder = impl_->searchers[m]->query_encoder();
    const SearchQueries query{.texts = &corpus, .begin = 0, .end = 1, .vectors = encoder.empty() ? torch::Tensor() : queries.at(encoder)};
    ModeAnswer found;
    found.mode = impl_->mode_names[m];
    found.top = std::move(impl_->top_labels(m, query, top).front());
    if (!labels.empty()) found.ranks = impl_->ranks_of(m, query, labels);
    found.search_ms = ms_since(search_start);
    answer.modes.push_back(std::move(found));
  }
  return answer;
}

std::vector<std::vector<LabelScore>> Predictor::predict(const std::vector<std::string>& texts, std::int64_t top, const std::string& mode) const {
  const std::size_t m = impl_->mode_index(mode);
  if (texts.empty()) return {};
  torch::NoGradGuard no_grad;
  const TokenizedCorpus corpus = impl_->run.method->tokenizer().tokenize(texts);
  return impl_->top_labels(m, impl_->queries_of(m, corpus), top);
}

}  // namespace xmc
