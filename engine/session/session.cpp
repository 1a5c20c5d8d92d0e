#include "engine/session/session.h"

#include <numeric>
#include <random>

#include "engine/config/component_config.h"
#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/core/error.h"
#include "engine/core/process_usage.h"
#include "engine/data/dataset.h"
#include "engine/data/image_file_list.h"
#include "engine/analysis/projection_2d.h"
#include "engine/eval/decile_bins.h"
#include "engine/session/local_workers.h"
#include "engine/records/evaluation_modes.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/config/component_info.h"
#include "engine/config/sweep_grid.h"
#include "engine/train/training_run.h"

namespace xmc {

Session::Session(std::filesystem::path db_path) : db_path_(std::move(db_path)) {
  keep_freed_memory_for_reuse();
  run_blas_on_calling_thread();
}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::filesystem::path& Session::db_path() const { return db_path_; }

void Session::open() { store(); }

RunStore& Session::store() const {
  if (!store_) store_ = std::make_unique<RunStore>(db_path_);
  return *store_;
}

Session Session::open_existing(const std::filesystem::path& db_path) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) throw Error(db_path.string() + ": no run store at this path");
  if (std::filesystem::is_directory(db_path, ec)) throw Error(db_path.string() + ": is a folder, not a run store");
  return Session(db_path);
}

std::vector<RunInfo> Session::list_runs() const { return store().list_runs(); }
std::optional<RunInfo> Session::find_run(std::int64_t run) const { return store().find_run(run); }
std::vector<RunInfo> Session::base_run_choices(const TrainConfig& config) const {
  const MethodInfo& method = method_info(config.method);
  std::vector<RunInfo> choices;
  if (!method.base_run || !method.check_base_run) return choices;
  const ComponentConfig components = component_config(config);
  for (RunInfo& run : store().list_runs()) {  // newest first
    try {
      method.check_base_run(components, component_config(parse_train_config(run.config_json, "run " + std::to_string(run.id) + " config")),
                            to_string(run.status));
      choices.push_back(std::move(run));
    } catch (const std::exception&) {  // not one it can build on (or a config this version cannot read)
    }
  }
  return choices;
}
RunInfo Session::get_run(std::int64_t run) const { return store().get_run(run); }
void Session::rename_run(std::int64_t run, const std::string& name) { store().rename_run(run, name); }
SweepInfo Session::create_sweep(const TrainConfig& base, const std::vector<SweepAxis>& axes, const std::string& name) {
  const auto points = sweep_points(axes);
  if (points.empty()) throw ConfigError("a sweep needs at least one --grid KEY=VALUE,VALUE");
  for (const auto& assignments : points) {
    TrainConfig config = base;
    apply_config_overrides(config, assignments);
    validate(config);
  }
  std::string sweep_name = name;
  if (sweep_name.empty()) {
    for (const auto& axis : axes) sweep_name += (sweep_name.empty() ? "" : " × ") + axis.key;
    sweep_name = (base.name.empty() ? base.method : base.name) + " over " + sweep_name;
  }
  return get_sweep(store().create_sweep(sweep_name, to_json(base), sweep_grid_json(axes), points));
}

std::vector<SweepInfo> Session::list_sweeps() const { return store().list_sweeps(); }
void Session::set_sweep_point_run(std::int64_t sweep, std::int64_t position, std::int64_t run) {
  store().set_sweep_point_run(sweep, position, run);
}

SweepInfo Session::get_sweep(std::int64_t sweep) const {
  auto info = store().find_sweep(sweep);
  if (!info) throw Error("run store " + db_path_.string() + ": there is no sweep with id " + std::to_string(sweep));
  return std::move(*info);
}

TrainConfig Session::sweep_point_config(const SweepInfo& sweep, const SweepPoint& point) {
  TrainConfig config = parse_train_config(sweep.config_json, "sweep " + std::to_string(sweep.id));
  apply_config_overrides(config, point.assignments);
  std::string values;
  for (const auto& a : point.assignments) values += (values.empty() ? "" : ", ") + a;
  config.name = (config.name.empty() ? sweep.name : config.name) + " [" + values + "]";
  return config;
}

void Session::set_run_notes(std::int64_t run, const std::string& notes) { store().set_notes(run, notes); }
void Session::add_run_tags(std::int64_t run, const std::vector<std::string>& tags) { store().add_tags(run, tags); }
void Session::remove_run_tags(std::int64_t run, const std::vector<std::string>& tags) { store().remove_tags(run, tags); }
void Session::delete_run(std::int64_t run) { delete_run_and_files(db_path_, run); }
int Session::reap_orphaned_runs() { return store().reap_orphaned_runs(); }
std::filesystem::path Session::run_directory(std::int64_t run) const { return xmc::run_directory(db_path_, run); }

std::vector<ScalarPoint> Session::scalars(std::int64_t run, const std::string& key, std::int64_t after_step) const {
  return store().scalars(run, key, after_step);
}
std::vector<std::string> Session::scalar_keys(std::int64_t run) const { return store().scalar_keys(run); }
SystemUse Session::system_use(std::int64_t run) const { return summarize_system_use(store().scalars_with_prefix(run, kSystemUsePrefix)); }
std::vector<ChosenSetting> Session::chosen_settings(std::int64_t run) const {
  return xmc::chosen_settings(store().scalars_with_prefix(run, kChosenSettingPrefix));
}
std::vector<EvalPoint> Session::evaluations(std::int64_t run) const { return store().evaluations(run); }
std::vector<DecileTable> Session::decile_tables(std::int64_t run, const std::string& metric) const { return store().decile_tables(run, metric); }
std::vector<double> Session::latest_decile_table(std::int64_t run, const std::string& metric) const {
  return store().latest_decile_table(run, metric);
}
std::optional<TsneSnapshot> Session::latest_tsne_snapshot(std::int64_t run) const { return store().latest_tsne_snapshot(run); }
std::vector<Artifact> Session::artifacts(std::int64_t run) const { return store().artifacts(run); }
std::vector<AddedLabel> Session::added_labels(std::int64_t run) const {
  store().get_run(run);  // names a missing run
  return store().added_labels(run);
}
void Session::remove_added_label(std::int64_t run, std::int64_t id) { store().remove_added_label(run, id); }
std::vector<LogLine> Session::run_log(std::int64_t run) const {
  store().get_run(run);  // names a missing run
  return store().log(run);
}

namespace {

/// This process's place in the job `processes` describes: alone, rank 0 of a local job (on a free
/// loopback port), or rank 0 of a multi-host one.
DistributedOptions rank_zero_options(const TrainingProcesses& processes) {
  if (processes.local < 1 || processes.local > 256)
    throw ConfigError("processes: got " + std::to_string(processes.local) + "; it must be in 1-256");
  if (processes.local > 1 && processes.multi_host.enabled())
    throw ConfigError("give either a number of local processes (--nproc) or a multi-host job (--world-size), not both");
  DistributedOptions options = processes.multi_host;
  if (processes.local > 1) {
    options = DistributedOptions{};
    options.world_size = processes.local;
    options.local_world_size = processes.local;
    options.master_port = free_local_port();
  }
  options.timeout_minutes = processes.timeout_minutes;
  validate(options);
  if (options.rank != 0) throw ConfigError("the process that owns the run is rank 0; start rank " + std::to_string(options.rank) + " as a worker");
  return options;
}

}  // namespace

RunHandle Session::start_run(TrainConfig config, const TrainingProcesses& processes) {
  const DistributedOptions options = rank_zero_options(processes);
  return RunHandle(std::make_unique<TrainingRun>(std::move(config), db_path_, options), processes, options);
}

RunHandle Session::resume_run(std::int64_t run, const std::vector<std::string>& overrides, const TrainingProcesses& processes, bool restart) {
  const DistributedOptions options = rank_zero_options(processes);
  return RunHandle(std::make_unique<TrainingRun>(TrainingRun::resume(run, db_path_, overrides, options, restart)), processes, options);
}

Predictor Session::open_predictor(std::int64_t run, const std::string& device, Progress& progress, const std::string& index_spec) const {
  return Predictor::open(db_path_, run, device, progress, index_spec);
}

Projection Session::projection(std::int64_t run, const ProjectionOptions& options, Progress& progress,
                               const std::function<void(const Projection& so_far)>& on_layout) const {
  if (options.what != "labels" && options.what != "queries")
    throw ConfigError("projection: got \"" + options.what + "\", expected labels or queries");
  if (options.method != "pca" && options.method != "tsne")
    throw ConfigError("projection method: got \"" + options.method + "\", expected pca or tsne");
  constexpr std::int64_t kMaxTsne = 5000;  // exact t-SNE: n² memory and time
  const std::int64_t cap = std::max<std::int64_t>(2, std::min<std::int64_t>(options.sample, options.method == "tsne" ? kMaxTsne : 1000000));
  const TrainConfig config = parse_train_config(get_run(run).config_json, "run " + std::to_string(run) + " config");
  const Dataset d = load_dataset(config.dataset, {.load_features = false});
  const Predictor predictor = open_predictor(run, "", progress);
  const bool labels = options.what == "labels";
  const std::int64_t n = labels ? d.num_labels() : static_cast<std::int64_t>(d.test_text.size());
  // A random sample, kept in id order.
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  if (n > cap) {
    std::mt19937_64 rng(options.seed);
    std::shuffle(ids.begin(), ids.end(), rng);
    ids.resize(static_cast<std::size_t>(cap));
    std::sort(ids.begin(), ids.end());
  }
  Projection out;
  out.options = options;
  std::int64_t dim = 0;
  std::vector<float> vectors;
  if (labels) {
    const std::vector<float> all = predictor.label_vectors(options.mode, dim);
    for (auto id : ids) vectors.insert(vectors.end(), all.begin() + id * dim, all.begin() + (id + 1) * dim);
    const std::vector<std::int8_t> deciles = decile_bins(d.label_frequencies());
    for (auto id : ids) {
      out.points.push_back({0, 0, id, deciles.empty() ? -1 : static_cast<int>(deciles[static_cast<std::size_t>(id)])});
      out.texts.push_back(d.label_text[static_cast<std::size_t>(id)]);
    }
  } else {
    std::vector<std::string> texts;
    for (auto id : ids) texts.push_back(d.test_text[static_cast<std::size_t>(id)]);
    progress.start("encoding test queries for the projection", static_cast<std::int64_t>(texts.size()));
    vectors = predictor.query_vectors(texts, options.mode, dim);
    progress.finish();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      out.points.push_back({0, 0, ids[i], -1});
      out.texts.push_back(texts[i]);
      const auto row = d.test_labels.row_indices(ids[i]);
      out.true_labels.emplace_back(row.begin(), row.end());
    }
    out.label_texts = d.label_text;
  }
  const auto place = [&out](const std::vector<float>& xy) {
    for (std::size_t i = 0; i < out.points.size(); ++i) {
      out.points[i].x = xy[2 * i];
      out.points[i].y = xy[2 * i + 1];
    }
  };
  std::function<void(const std::vector<float>&)> converging;
  if (on_layout)
    converging = [&](const std::vector<float>& xy) {
      place(xy);
      on_layout(out);
    };
  place(project_2d(vectors, static_cast<std::int64_t>(ids.size()), dim, options.method, options.seed, progress, converging));
  return out;
}

LabelQualityReport Session::label_quality(std::int64_t run, std::int64_t k, const std::string& mode, Progress& progress) const {
  if (k < 1 || k > 1000) throw ConfigError("k: got " + std::to_string(k) + ", expected 1 to 1000");
  const TrainConfig config = parse_train_config(get_run(run).config_json, "run " + std::to_string(run) + " config");
  const Dataset d = load_dataset(config.dataset, {.load_features = false});
  const Predictor predictor = open_predictor(run, "", progress);
  LabelQualityReport report;
  report.k = k;
  report.mode = mode.empty() ? predictor.default_mode() : mode;
  report.modes = predictor.modes();
  report.test_queries = static_cast<std::int64_t>(d.test_text.size());
  const std::int64_t num_labels = d.test_labels.cols;
  const std::vector<std::int64_t> train_counts = d.label_frequencies();
  report.labels.resize(static_cast<std::size_t>(num_labels));
  for (std::int64_t l = 0; l < num_labels; ++l) {
    LabelQuality& q = report.labels[static_cast<std::size_t>(l)];
    q.label = l;
    q.text = l < static_cast<std::int64_t>(d.label_text.size()) ? d.label_text[static_cast<std::size_t>(l)] : std::string();
    q.train_count = l < static_cast<std::int64_t>(train_counts.size()) ? train_counts[static_cast<std::size_t>(l)] : 0;
  }
  constexpr std::size_t kChunk = 2048;
  progress.start("ranking test queries for per-label quality", report.test_queries);
  for (std::size_t start = 0; start < d.test_text.size(); start += kChunk) {
    const std::size_t end = std::min(d.test_text.size(), start + kChunk);
    const std::vector<std::string> chunk(d.test_text.begin() + static_cast<std::ptrdiff_t>(start), d.test_text.begin() + static_cast<std::ptrdiff_t>(end));
    const auto ranked = predictor.predict(chunk, k, report.mode);
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const auto row = static_cast<std::int64_t>(start + i);
      const auto truth = d.test_labels.row_indices(row);
      for (const LabelScore& hit : ranked[i])
        if (hit.label < num_labels) ++report.labels[static_cast<std::size_t>(hit.label)].predicted;
      for (const auto label : truth) {
        LabelQuality& q = report.labels[static_cast<std::size_t>(label)];
        ++q.test_count;
        const bool found = std::any_of(ranked[i].begin(), ranked[i].end(), [&](const LabelScore& hit) { return hit.label == label; });
        if (found)
          ++q.hits;
        else if (q.missed_queries.size() < 5)
          q.missed_queries.push_back(row);
      }
    }
    progress.update(static_cast<std::int64_t>(end));
  }
  progress.finish();
  report.test_texts = d.test_text;
  return report;
}

std::vector<std::pair<std::string, std::vector<std::int32_t>>> Session::dataset_queries(std::int64_t run) const {
  const TrainConfig config = parse_train_config(get_run(run).config_json, "run " + std::to_string(run) + " config");
  const Dataset d = load_dataset(config.dataset, {.load_features = false});
  std::vector<std::pair<std::string, std::vector<std::int32_t>>> out;
  auto add = [&](const std::vector<std::string>& texts, const CsrMatrix& labels) {
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto row = labels.row_indices(static_cast<std::int64_t>(i));
      out.emplace_back(texts[i], std::vector<std::int32_t>(row.begin(), row.end()));
    }
  };
  add(d.train_text, d.train_labels);
  add(d.test_text, d.test_labels);
  return out;
}

bool Session::DatasetImageFiles::any() const {
  for (const auto* split : {&queries, &labels})
    for (const auto& files : *split)
      if (!files.empty()) return true;
  return false;
}

Session::DatasetImageFiles Session::dataset_image_files(std::int64_t run) const {
  const TrainConfig config = parse_train_config(get_run(run).config_json, "run " + std::to_string(run) + " config");
  const Dataset d = load_dataset(config.dataset, {.load_features = false, .load_images = false});
  // A split's list, row for row with its texts (a short list leaves the rest without images; extra lines are ignored).
  auto split = [&](const char* name, std::size_t rows, std::vector<std::vector<std::string>>& out) {
    const auto list = image_files::file_list(config.dataset, name);
    std::vector<std::vector<std::filesystem::path>> items;
    std::error_code error;
    if (std::filesystem::exists(list, error)) items = read_image_file_list(list);
    for (std::size_t i = 0; i < rows; ++i) {
      out.emplace_back();
      if (i < items.size())
        for (const auto& path : items[i]) out.back().push_back(path.string());
    }
  };
  DatasetImageFiles out;
  split("trn", d.train_text.size(), out.queries);
  split("tst", d.test_text.size(), out.queries);
  split("lbl", d.label_text.size(), out.labels);
  return out;
}

bool Session::dataset_folder_has_images(const std::filesystem::path& folder) {
  try {
    return !folder.empty() && dataset_image_dim(folder) > 0;
  } catch (const std::exception&) {
    return false;
  }
}

DatasetSummary Session::summarize_dataset_folder(const std::filesystem::path& folder) {
  return summarize_dataset(load_dataset(folder, {.load_features = false}));
}

void Session::build_wordnet_dataset_folder(const WordnetBuildOptions& options, const std::filesystem::path& out, Progress& progress) {
  save_dataset(build_wordnet_dataset(options, progress), out);
}

void Session::build_synthetic_dataset_folder(const SyntheticBuildOptions& options, const std::filesystem::path& out, Progress& progress) {
  save_dataset(build_synthetic_dataset(options, progress), out);
}

void Session::import_mulan_dataset_folder(const MulanImportOptions& options, const std::filesystem::path& out, Progress& progress) {
  save_dataset(import_mulan(options, progress), out);
}

RunReportContent Session::report_content(std::int64_t run) const {
  RunReportContent d;
  d.info = store().get_run(run);
  d.scalars = store().scalars(run);
  d.evaluations = without_primary_copies(store().evaluations(run));  // the primary mode shows as P@k, once
  d.deciles = store().decile_tables(run);
  d.artifacts = store().artifacts(run);
  d.log = store().log(run);
  d.tsne = store().latest_tsne_snapshot(run);
  const std::filesystem::path dir = d.info.dataset_path;
  std::error_code ec;
  if (dir.empty()) {
    d.dataset_note = "The run records no dataset folder.";
  } else if (!std::filesystem::is_directory(dir, ec)) {
    d.dataset_note = "The dataset folder " + dir.string() + " no longer exists: statistics are not available.";
  } else {
    try {
      d.dataset = summarize_dataset_folder(dir);
      const std::string fingerprint = dataset_fingerprint(dir);
      if (!d.info.dataset_fingerprint.empty() && fingerprint != d.info.dataset_fingerprint)
        d.dataset_note = "The dataset folder changed since the run was created (fingerprint " + fingerprint + ", the run recorded " +
                         d.info.dataset_fingerprint + "): these statistics describe it as it is now.";
    } catch (const std::exception& e) {
      d.dataset_note = std::string("The dataset folder could not be loaded: ") + e.what();
    }
  }
  return d;
}

}  // namespace xmc
