#include "engine/session/predictor.h"

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
#include "engine/index/exact_search.h"
#include "engine/index/index_factory.h"
#include "engine/method/trained_run.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/train/retrieval_augmented_ranking.h"
#include "engine/config/component_info.h"
#include "engine/config/train_config.h"

namespace xmc {
namespace {

/// A file name part for an index spec: "faiss:IVF256,Flat" -> "faiss-IVF256-Flat".
std::string file_safe(const std::string& spec) {
  std::string out;
  for (char c : spec) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
  return out;
}

}  // namespace

struct Predictor::Impl {
  TrainedRun run;
  std::filesystem::path db_path;
  std::unique_ptr<RunStore> store;        ///< kept open: adding a label is a few milliseconds, opening a store is not
  std::int64_t dataset_labels = 0;        ///< labels of the dataset; added labels follow
  std::optional<TrainedRun> synthesizer;  ///< the IRENE run built on this run, when there is one
  std::string synthesized_by = "embedding";
  std::string index_spec;
  std::vector<InferenceMode> modes;            ///< label matrices (exact scores, for rank_of), primary first
  /// One per mode, searched by predict(); none with exact search, which reads the modes' label matrices where they
  /// lie (an exact index holds a copy of its own: UniDEC's three came to 5 GB beside the 2.7 GB matrix at 1.3M labels).
  std::vector<std::unique_ptr<Index>> indexes;
  std::vector<std::string> mode_names;
  /// Per mode, the label of each label-matrix row when the mode ranks a subset of the labels (empty: row = label).
  std::vector<std::vector<std::int64_t>> row_labels;

  /// Retrieval-augmented inference (rag.use on): the mode "rag" at position rag_mode (none: npos), ranking the
  /// labels of the mode at rag_base with the training queries' vectors and labels (retrieval_augmented_ranking.h).
  static constexpr std::size_t kNoMode = static_cast<std::size_t>(-1);
  std::size_t rag_mode = kNoMode;
  std::size_t rag_base = 0;
  CsrMatrix rag_train_labels;
  RetrievalAugmentation rag;

  std::int64_t label_of(std::size_t mode, std::int64_t row) const { return row_labels[mode].empty() ? row : row_labels[mode][static_cast<std::size_t>(row)]; }

  /// The position of `mode` ("" = the primary); ConfigError naming the known modes otherwise.
  std::size_t mode_index(const std::string& mode) const {
    if (mode.empty()) return 0;
    for (std::size_t m = 0; m < modes.size(); ++m)
      if (modes[m].name == mode) return m;
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

  /// Rows added since each mode's label_matrix was last made whole: copying a 10^4-row matrix for every
  /// added label took milliseconds; rank_of() joins them when it needs the matrix.
  std::vector<std::vector<torch::Tensor>> pending;

  const torch::Tensor& matrix(std::size_t m) {
    if (m == rag_mode) return matrix(rag_base);
    if (m < pending.size() && !pending[m].empty()) {
      pending[m].insert(pending[m].begin(), modes[m].label_matrix);
      modes[m].label_matrix = torch::cat(pending[m]);
      pending[m].clear();
    }
    return modes[m].label_matrix;
  }

  void insert(const std::vector<std::string>& texts) {
    if (texts.empty()) return;
    insert(texts, new_label_vectors(texts));
  }

  /// Adds labels whose vectors (one matrix per mode, from new_label_vectors()) are computed already.
  void insert(const std::vector<std::string>& texts, const std::vector<torch::Tensor>& vectors) {
    if (texts.empty()) return;
    pending.resize(modes.size());
    for (std::size_t m = 0; m < modes.size(); ++m) {
      if (m == rag_mode) continue;  // ranks the labels of its base mode: nothing of its own to add
      const torch::Tensor& matrix = modes[m].label_matrix;
      pending[m].push_back(vectors[m].to(matrix.device(), matrix.scalar_type()));
      if (indexes[m]) {
        const torch::Tensor rows = vectors[m].to(torch::kCPU, torch::kFloat32).contiguous();
        indexes[m]->add(rows.size(0), rows.data_ptr<float>());
      }
      // A mode of a label subset (IRENE's zero-shot) ranks added labels too.
      if (modes[m].subset)
        for (std::size_t i = 0; i < texts.size(); ++i) row_labels[m].push_back(static_cast<std::int64_t>(run.label_texts.size() + i));
    }
    run.label_texts.insert(run.label_texts.end(), texts.begin(), texts.end());
  }

  torch::Tensor encode(const InferenceMode& mode, const std::vector<std::string>& texts) const {
    const TokenizedCorpus corpus = run.method->tokenizer().tokenize(texts);
    return run.method->encode_queries(mode.query_encoder, corpus, silent_progress(), "encoding queries");
  }

  /// The row of `label` in mode `m`'s label matrix, or -1 when the mode does not rank it.
  std::int64_t row_of(std::size_t m, std::int64_t label) const {
    const auto& rows = row_labels[m];
    if (rows.empty()) return label;
    const auto at = std::find(rows.begin(), rows.end(), label);
    return at == rows.end() ? -1 : at - rows.begin();
  }

  void check_label(std::int64_t label) const {
    if (label < 0 || label >= static_cast<std::int64_t>(run.label_texts.size()))
      throw ConfigError("label " + std::to_string(label) + " is out of range: run " + std::to_string(run.run_id) + " has " +
                        std::to_string(run.label_texts.size()) + " labels");
  }

  /// The exact score of every label-matrix row of mode `m` for one query `q` [1 x d], on the CPU: the
  /// products key chunk by key chunk as exact search computes them, so that ranks agree with the exact
  /// index's order (an approximate index may order its results differently).
  torch::Tensor exact_scores(std::size_t m, const torch::Tensor& q) {
    const torch::Tensor& labels = matrix(m);
    const torch::Tensor query = q.to(labels.device(), labels.scalar_type());
    const std::int64_t key_chunk = ExactSearchOptions{}.key_chunk;
    std::vector<torch::Tensor> parts;
    for (std::int64_t k0 = 0; k0 < labels.size(0); k0 += key_chunk)
      parts.push_back(chunk_inner_products(query, labels.narrow(0, k0, std::min(key_chunk, labels.size(0) - k0))).reshape({-1}));
    return torch::cat(parts).to(torch::kCPU, torch::kFloat32).contiguous();
  }

  /// Rank 1 = best; equal scores are ordered by lower row first, as search orders them.
  static LabelRank rank_in(const torch::Tensor& scores, std::int64_t row) {
    const float* s = scores.data_ptr<float>();
    const float own = s[row];
    std::int64_t better = 0;
    for (std::int64_t r = 0; r < scores.size(0); ++r) better += s[r] > own || (r < row && s[r] == own);
    return {better + 1, own};
  }

  /// With rag.use on, the mode "rag" after the method's, built on its training-space mode: the training queries'
  /// vectors come from rag-train-queries.pt in the run's folder while it is newer than the checkpoint, else are
  /// encoded (progress reported) and saved there.
  void add_rag_mode(const std::filesystem::path& run_dir, std::filesystem::file_time_type checkpoint_time, Progress& progress) {
    const RagOptions& options = run.config.get<RagOptions>();
    if (options.use != "on" || modes.empty()) return;
    const auto base = std::find_if(modes.begin(), modes.end(), [](const InferenceMode& mode) { return mode.training_space; });
    rag_base = base == modes.end() ? 0 : static_cast<std::size_t>(base - modes.begin());
    if (modes[rag_base].subset) return;  // a mode of a label subset (IRENE's zero-shot) has no training queries to lean on
    if (modes[rag_base].ranker) return;  // a mode that ranks by itself (xrlinear's tree) has no embeddings to retrieve with
    const Dataset dataset = load_dataset(run.config.dataset, {.load_features = false});
    rag_train_labels = dataset.train_labels;
    const auto saved = run_dir / "rag-train-queries.pt";
    torch::Tensor vectors;
    std::error_code error;
    if (std::filesystem::exists(saved, error) && std::filesystem::last_write_time(saved, error) > checkpoint_time) {
      try {
        check_torch_archive(saved);  // a cache, but read by LibTorch: damage it cannot survive is refused first
        torch::load(vectors, saved.string());
        if (vectors.dim() != 2 || vectors.size(0) != dataset.num_train() || vectors.size(1) != modes[rag_base].label_matrix.size(1)) vectors = torch::Tensor();
      } catch (const std::exception&) {
        vectors = torch::Tensor();  // damaged: encoded and saved again below
      }
    }
    if (!vectors.defined()) {
      torch::NoGradGuard no_grad;
      vectors = run.method->encode_queries(modes[rag_base].query_encoder, run.method->tokenizer().tokenize(dataset.train_text), progress,
                                           "rag: encoding training queries").to(torch::kCPU, torch::kFloat).contiguous();
      try {
        torch::save(vectors, saved.string());
      } catch (const std::exception&) {
        // A store folder we may not write to: encoded again next time.
      }
    }
    rag = RetrievalAugmentation{.train_queries = vectors, .train_labels = &rag_train_labels, .top = options.top,
                                .lambda = options.lambda, .temperature = options.temperature};
    rag_mode = modes.size();
    modes.push_back({.name = "rag", .metric_prefix = "rag", .query_encoder = modes[rag_base].query_encoder,
                     .label_matrix = modes[rag_base].label_matrix});
  }

  /// The retrieval-augmented ranking of query rows `queries`: every label it gives a score, best first.
  RankedPredictions rag_ranking(const torch::Tensor& queries, std::int64_t top) {
    return rank_with_retrieval(queries, matrix(rag_base), rag, top);
  }

  /// Where `label` is in the rag ranking of one query (rank 0: the retrieval gave it no score).
  LabelRank rag_rank_of(const torch::Tensor& query, std::int64_t label) {
    const RankedPredictions ranked = rag_ranking(query, static_cast<std::int64_t>(run.label_texts.size()));
    const auto* ids = ranked.labels.data_ptr<std::int64_t>();
    for (std::int64_t j = 0; j < ranked.labels.size(1) && ids[j] >= 0; ++j)
      if (ids[j] == label) return {j + 1, ranked.scores[0][j].item<float>()};
    return {};
  }

  /// The top `top` labels of `texts` in mode `m`, which ranks by itself (a QueryRanker).
  std::vector<std::vector<LabelScore>> ranker_top_labels(std::size_t m, const TokenizedCorpus& corpus, std::int64_t top) const {
    const std::int64_t n = corpus.size();
    std::vector<std::vector<LabelScore>> out(static_cast<std::size_t>(n));
    const std::int64_t k = std::min<std::int64_t>(top, modes[m].ranker->num_labels());
    if (k <= 0 || n == 0) return out;
    const RankedPredictions ranked = modes[m].ranker->rank(corpus, 0, n, k);
    const auto* ids = ranked.labels.data_ptr<std::int64_t>();
    const auto* scores = ranked.scores.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < k && ids[i * k + j] >= 0; ++j) {
        const std::int64_t label = ids[i * k + j];
        out[static_cast<std::size_t>(i)].push_back({label, scores[i * k + j], run.label_texts[static_cast<std::size_t>(label)]});
      }
    return out;
  }

  /// Where `label` is in `ranked` (a ranker's list, best first); rank 0 when the ranker did not reach it.
  static LabelRank rank_in_list(const std::vector<LabelScore>& ranked, std::int64_t label) {
    const auto at = std::find_if(ranked.begin(), ranked.end(), [&](const LabelScore& s) { return s.label == label; });
    return at == ranked.end() ? LabelRank{} : LabelRank{at - ranked.begin() + 1, at->score};
  }

  /// Throws ConfigError when mode `m` ranks by itself and so has no vectors.
  void check_has_vectors(std::size_t m) const {
    if (modes[m].ranker)
      throw ConfigError("mode " + modes[m].name + " of run " + std::to_string(run.run_id) + " ranks labels by itself (" + run.method->name() +
                        "): it has no label or query vectors");
  }

  /// The index's top `top` of query rows `queries` [n x d] in mode `m`, as labels.
  std::vector<std::vector<LabelScore>> top_labels(std::size_t m, const torch::Tensor& queries, std::int64_t top) {
    if (m == rag_mode) {
      const RankedPredictions ranked = rag_ranking(queries, top);
      std::vector<std::vector<LabelScore>> out(static_cast<std::size_t>(queries.size(0)));
      const auto* ids = ranked.labels.data_ptr<std::int64_t>();
      const auto* scores = ranked.scores.data_ptr<float>();
      for (std::int64_t i = 0; i < queries.size(0); ++i)
        for (std::int64_t j = 0; j < top && ids[i * top + j] >= 0; ++j) {
          const std::int64_t label = ids[i * top + j];
          out[static_cast<std::size_t>(i)].push_back({label, scores[i * top + j], run.label_texts[static_cast<std::size_t>(label)]});
        }
      return out;
    }
    const torch::Tensor q = queries.to(torch::kCPU, torch::kFloat32).contiguous();
    const std::int64_t n = q.size(0);
    const std::int64_t k = std::min<std::int64_t>(top, indexes[m] ? indexes[m]->ntotal() : matrix(m).size(0));
    std::vector<std::vector<LabelScore>> out(static_cast<std::size_t>(n));
    if (k <= 0) return out;
    std::vector<float> scores(static_cast<std::size_t>(n * k));
    std::vector<std::int64_t> ids(static_cast<std::size_t>(n * k));
    if (indexes[m]) {
      indexes[m]->search(n, q.data_ptr<float>(), k, scores.data(), ids.data());
    } else {  // exact: the search an exact index runs, on the label matrix itself
      torch::Tensor keys = matrix(m).detach();
      if (keys.scalar_type() != torch::kFloat) keys = keys.to(torch::kFloat);
      const TopK found = exact_top_k(q.to(keys.device()), keys, k);
      torch::from_blob(scores.data(), {n, k}, torch::kFloat).copy_(found.scores.to(torch::kCPU));
      torch::from_blob(ids.data(), {n, k}, torch::kInt64).copy_(found.indices.to(torch::kCPU));
    }
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < k; ++j) {
        const auto row = ids[static_cast<std::size_t>(i * k + j)];
        if (row < 0) break;
        const auto label = label_of(m, row);
        out[static_cast<std::size_t>(i)].push_back({label, scores[static_cast<std::size_t>(i * k + j)], run.label_texts[static_cast<std::size_t>(label)]});
      }
    return out;
  }
};

Predictor::Predictor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::vector<float> Predictor::label_vectors(const std::string& mode, std::int64_t& dim) const {
  const std::size_t at = impl_->mode_index(mode);
  impl_->check_has_vectors(at);
  const InferenceMode& m = impl_->modes[at];
  const torch::Tensor matrix = m.label_matrix.to(torch::kCPU, torch::kFloat32).contiguous();
  dim = matrix.size(1);
  return {matrix.data_ptr<float>(), matrix.data_ptr<float>() + matrix.numel()};
}

std::vector<float> Predictor::query_vectors(const std::vector<std::string>& texts, const std::string& mode, std::int64_t& dim) const {
  torch::NoGradGuard no_grad;
  const std::size_t at = impl_->mode_index(mode);
  impl_->check_has_vectors(at);
  const InferenceMode& m = impl_->modes[at];
  const torch::Tensor q = impl_->encode(m, texts).to(torch::kCPU, torch::kFloat32).contiguous();
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
  {
    torch::NoGradGuard no_grad;
    impl->modes = impl->run.method->inference_modes(labels, progress);
  }
  // An approximate index is built once per run and mode, saved beside the checkpoint and reused while
  // the checkpoint is older than it.
  const auto run_dir = run_directory(db_path, run_id);
  const auto checkpoint_time = std::filesystem::last_write_time(checkpoint_file(run_dir));
  impl->add_rag_mode(run_dir, checkpoint_time, progress);
  for (const InferenceMode& mode : impl->modes) {
    impl->mode_names.push_back(mode.name);
    if (mode.name == "rag" && impl->rag_mode != Impl::kNoMode) {
      impl->row_labels.emplace_back();
      impl->indexes.push_back(nullptr);  // searched through its base mode's labels and the training queries
      continue;
    }
    impl->row_labels.push_back(mode.subset ? mode.subset->label_ids : std::vector<std::int64_t>{});
    if (mode.ranker) {
      impl->indexes.push_back(nullptr);  // ranks by itself
      continue;
    }
    if (impl->index_spec == "exact") {
      impl->indexes.push_back(nullptr);  // searched in place
      continue;
    }
    const torch::Tensor matrix = mode.label_matrix.to(torch::kCPU, torch::kFloat32).contiguous();
    const auto saved = run_dir / ("index-" + mode.name + "-" + file_safe(impl->index_spec) + ".bin");
    std::unique_ptr<Index> index;
    if (std::filesystem::exists(saved) && std::filesystem::last_write_time(saved) > checkpoint_time) {
      try {
        if (read_saved_index_info(saved).spec == impl->index_spec) index = load_index(saved);
      } catch (const InputError&) {
        index.reset();  // damaged: rebuilt and saved again below
      }
      if (index && (index->ntotal() != matrix.size(0) || index->dim() != matrix.size(1))) index.reset();
    }
    if (!index) {
      progress.start("search index: " + impl->index_spec + " over " + mode.name, 1);
      index = make_index(impl->index_spec, matrix.size(1));
      index->add(matrix.size(0), matrix.data_ptr<float>());
      progress.update(1);
      progress.finish();
      try {
        save_index(*index, impl->index_spec, saved);
      } catch (const Error&) {
        // A store folder we may not write to: the index serves this session and is built again next time.
      }
    }
    impl->indexes.push_back(std::move(index));
  }
  impl->db_path = db_path;
  impl->dataset_labels = static_cast<std::int64_t>(impl->run.label_texts.size());
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
      if (!method.base_run || method.base_run(config) != run_id) continue;
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
  const std::size_t mode_at = impl_->mode_index(mode);
  const InferenceMode& m = impl_->modes[mode_at];
  impl_->check_label(label);
  const std::int64_t row = impl_->row_of(mode_at, label);
  if (row < 0)
    throw ConfigError("label " + std::to_string(label) + " is not ranked in mode " + m.name + " of run " + std::to_string(run_id()) +
                      " (it ranks " + std::to_string(impl_->row_labels[mode_at].size()) + " of the labels)");
  torch::NoGradGuard no_grad;
  if (m.ranker)
    return Impl::rank_in_list(impl_->ranker_top_labels(mode_at, impl_->run.method->tokenizer().tokenize({text}), m.ranker->num_labels()).front(), label);
  if (mode_at == impl_->rag_mode) return impl_->rag_rank_of(impl_->encode(m, {text}), label);
  return Impl::rank_in(impl_->exact_scores(mode_at, impl_->encode(m, {text})), row);
}

SearchAnswer Predictor::search(const std::string& text, std::int64_t top, const std::vector<std::int64_t>& labels) const {
  for (const std::int64_t label : labels) impl_->check_label(label);
  torch::NoGradGuard no_grad;
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  SearchAnswer answer;
  // Every query encoder the modes use, in one call: a method whose encoders share a pass does it once.
  std::vector<std::string> encoders;
  for (const InferenceMode& mode : impl_->modes)
    if (!mode.ranker && std::find(encoders.begin(), encoders.end(), mode.query_encoder) == encoders.end()) encoders.push_back(mode.query_encoder);
  const auto encode_start = Clock::now();
  const TokenizedCorpus corpus = impl_->run.method->tokenizer().tokenize({text});
  const std::map<std::string, torch::Tensor> queries =
      encoders.empty() ? std::map<std::string, torch::Tensor>{}
                       : impl_->run.method->encode_queries_for(encoders, corpus, silent_progress(), "encoding the query");
  answer.encode_ms = ms_since(encode_start);
  for (std::size_t m = 0; m < impl_->modes.size(); ++m) {
    const auto search_start = Clock::now();
    ModeAnswer found;
    found.mode = impl_->modes[m].name;
    if (impl_->modes[m].ranker) {
      // One ranking serves the top-k and the ranks of the labels asked about: the beam orders its first k the same
      // however deep the list it keeps.
      std::vector<LabelScore> ranked =
          std::move(impl_->ranker_top_labels(m, corpus, labels.empty() ? top : impl_->modes[m].ranker->num_labels()).front());
      for (const std::int64_t label : labels) found.ranks.push_back(Impl::rank_in_list(ranked, label));
      if (static_cast<std::int64_t>(ranked.size()) > top) ranked.resize(static_cast<std::size_t>(top));
      found.top = std::move(ranked);
      found.search_ms = ms_since(search_start);
      answer.modes.push_back(std::move(found));
      continue;
    }
    const torch::Tensor& q = queries.at(impl_->modes[m].query_encoder);
    found.top = std::move(impl_->top_labels(m, q, top).front());
    if (!labels.empty() && m == impl_->rag_mode) {
      for (const std::int64_t label : labels) found.ranks.push_back(impl_->rag_rank_of(q, label));
    } else if (!labels.empty()) {
      const torch::Tensor scores = impl_->exact_scores(m, q);
      for (const std::int64_t label : labels) {
        const std::int64_t row = impl_->row_of(m, label);
        found.ranks.push_back(row < 0 ? LabelRank{} : Impl::rank_in(scores, row));
      }
    }
    found.search_ms = ms_since(search_start);
    answer.modes.push_back(std::move(found));
  }
  return answer;
}

std::vector<std::vector<LabelScore>> Predictor::predict(const std::vector<std::string>& texts, std::int64_t top, const std::string& mode) const {
  const std::size_t m = impl_->mode_index(mode);
  if (texts.empty()) return {};
  torch::NoGradGuard no_grad;
  if (impl_->modes[m].ranker) return impl_->ranker_top_labels(m, impl_->run.method->tokenizer().tokenize(texts), top);
  return impl_->top_labels(m, impl_->encode(impl_->modes[m], texts), top);
}

}  // namespace xmc
