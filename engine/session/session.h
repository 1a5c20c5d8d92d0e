#pragma once
// The one facade the CLI and the workbench use (plain C++, DESIGN §1): the runs of one run store, their
// recorded history, training (start, resume, stop, pause, follow), trained runs as predictors, datasets
// (summaries, WordNet builds, mulan imports), and the content of a run's report. Widgets include this and
// the plain data headers it names, never the rest of the engine. A Session is used by one thread at a
// time: open one per thread (it is cheap) rather than sharing one.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/dataset_summary.h"
#include "engine/data/mulan_importer.h"
#include "engine/data/synthetic_builder.h"
#include "engine/data/wordnet_builder.h"
#include "engine/session/predictor.h"
#include "engine/session/run_handle.h"
#include "engine/records/chosen_settings.h"
#include "engine/records/run_records.h"
#include "engine/records/system_use.h"
#include "engine/session/label_quality.h"
#include "engine/session/projection.h"
#include "engine/config/sweep_grid.h"
#include "engine/config/train_config.h"

namespace xmc {

class RunStore;

/// Everything a report of one run shows, as plain data (rendering is the caller's).
struct RunReportContent {
  RunInfo info;
  std::vector<ScalarPoint> scalars;
  std::vector<EvalPoint> evaluations;
  std::vector<DecileTable> deciles;
  std::vector<Artifact> artifacts;
  std::vector<LogLine> log;  ///< the run's phases and decisions, oldest first
  std::optional<TsneSnapshot> tsne;
  std::optional<DatasetSummary> dataset;  ///< statistics of the run's dataset folder as it is now
  std::string dataset_note;               ///< why there are no statistics, or that the folder changed
};

class Session {
 public:
  /// The run store at `db_path`, opened (or created) when first used: a config refused by start_run()
  /// leaves no empty store behind.
  explicit Session(std::filesystem::path db_path);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::filesystem::path& db_path() const;
  /// Opens the store now, so that a bad path or a damaged store is reported here rather than at first use.
  void open();
  /// Opens an existing store only: a typo'd path must not create an empty database. Throws Error.
  static Session open_existing(const std::filesystem::path& db_path);

  // ---- runs ---------------------------------------------------------------------------------------
  std::vector<RunInfo> list_runs() const;
  std::optional<RunInfo> find_run(std::int64_t run) const;
  /// The runs of this store that `config`'s method could build on (IRENE: finished ngame or unidec runs on
  /// the same zero-shot split as config.dataset), newest first, each checked as a start would check it; empty
  /// for a method that builds on no run.
  std::vector<RunInfo> base_run_choices(const TrainConfig& config) const;
  RunInfo get_run(std::int64_t run) const;  ///< throws Error naming the run when there is none
  void rename_run(std::int64_t run, const std::string& name);
  /// The run's notes (replaced) and tags (RunStore::set_notes, add_tags, remove_tags).
  void set_run_notes(std::int64_t run, const std::string& notes);
  void add_run_tags(std::int64_t run, const std::vector<std::string>& tags);
  void remove_run_tags(std::int64_t run, const std::vector<std::string>& tags);
  /// Deletes the run and its files (checkpoint, vocabulary, saved indexes).
  void delete_run(std::int64_t run);
  /// Marks runs whose process died as failed; returns how many.
  int reap_orphaned_runs();
  /// The folder of a run's files.
  std::filesystem::path run_directory(std::int64_t run) const;

  // ---- history: what plots and tables show; follow a live run with `after_step` --------------------
  /// Scalars of `key` ("" = all keys) recorded after step `after_step` (-1 = all), in step order.
  std::vector<ScalarPoint> scalars(std::int64_t run, const std::string& key = {}, std::int64_t after_step = -1) const;
  std::vector<std::string> scalar_keys(std::int64_t run) const;
  /// Config values the run chose while training (engine/records/chosen_settings.h), by key.
  std::vector<ChosenSetting> chosen_settings(std::int64_t run) const;
  /// The training process's peak memory and CPU use (engine/records/system_use.h).
  SystemUse system_use(std::int64_t run) const;
  std::vector<EvalPoint> evaluations(std::int64_t run) const;
  std::vector<DecileTable> decile_tables(std::int64_t run, const std::string& metric = {}) const;
  std::vector<double> latest_decile_table(std::int64_t run, const std::string& metric) const;
  std::optional<TsneSnapshot> latest_tsne_snapshot(std::int64_t run) const;
  std::vector<Artifact> artifacts(std::int64_t run) const;
  /// Labels added to a trained run by their text (open_predictor(run).add_label adds them), oldest first.
  std::vector<AddedLabel> added_labels(std::int64_t run) const;
  /// The run's log: the phases it went through and what it decided, oldest first.
  std::vector<LogLine> run_log(std::int64_t run) const;
  /// Forgets an added label (by its row id in added_labels()); later predictors of the run no longer rank it.
  void remove_added_label(std::int64_t run, std::int64_t id);

  // ---- training -----------------------------------------------------------------------------------
  /// Validates `config` and records a new run ("created"); run() it to train, in one process or as a
  /// data-parallel job (`processes`).
  RunHandle start_run(TrainConfig config, const TrainingProcesses& processes = {});
  /// Re-opens a stopped or failed run to continue from its latest checkpoint; `overrides` ("key=value")
  /// may change keys that do not alter the model. The number of processes may differ from the first time.
  /// `restart`: train it again from step 0 (TrainingRun::resume), e.g. when its checkpoint was lost.
  RunHandle resume_run(std::int64_t run, const std::vector<std::string>& overrides = {}, const TrainingProcesses& processes = {},
                       bool restart = false);

  // ---- sweeps -------------------------------------------------------------------------------------
  /// Records a sweep over `axes` on `base` (no run yet; SweepRunner trains it). Every point's config is
  /// built and validated first, so a typo in a key or value fails here, naming it, and nothing is stored.
  SweepInfo create_sweep(const TrainConfig& base, const std::vector<SweepAxis>& axes, const std::string& name = "");
  std::vector<SweepInfo> list_sweeps() const;
  SweepInfo get_sweep(std::int64_t sweep) const;  ///< throws Error naming the sweep when there is none
  /// Records the run that trains a sweep's point (SweepRunner does, as it starts it).
  void set_sweep_point_run(std::int64_t sweep, std::int64_t position, std::int64_t run);
  /// The config of a sweep's point: the base config with the point's assignments, named after the base
  /// config (or the sweep) and the values: "unidec bow on Bibtex [lr=0.003, temperature=0.1]".
  static TrainConfig sweep_point_config(const SweepInfo& sweep, const SweepPoint& point);

  // ---- trained runs -------------------------------------------------------------------------------
  /// The run's latest checkpoint as a predictor over every inference mode, each searched with the
  /// index `index_spec` ("exact", "hnsw", "faiss:IVF256,Flat", ...). `device` "" = the run's.
  Predictor open_predictor(std::int64_t run, const std::string& device = "", Progress& progress = silent_progress(),
                           const std::string& index_spec = "exact") const;

  /// The run's label vectors or test-query vectors in 2-D (ProjectionOptions): PCA of all of them (up to the
  /// sample size), or t-SNE of a sample; throws ConfigError for an unknown `what`, `method` or mode.
  /// `on_layout`, when given, gets the projection as t-SNE converges (the same points, their places so far), from
  /// the thread that computes it.
  Projection projection(std::int64_t run, const ProjectionOptions& options, Progress& progress = silent_progress(),
                        const std::function<void(const Projection& so_far)>& on_layout = {}) const;

  /// Ranks the run's test queries with `mode` ("" = the run's primary) and counts, per label, its test
  /// queries, those that find it within the top `k`, and the queries that rank it there at all.
  LabelQualityReport label_quality(std::int64_t run, std::int64_t k = 5, const std::string& mode = "",
                                   Progress& progress = silent_progress()) const;

  // ---- datasets -----------------------------------------------------------------------------------
  /// Every training and test query text of run `run`'s dataset with its true labels (train rows first).
  std::vector<std::pair<std::string, std::vector<std::int32_t>>> dataset_queries(std::int64_t run) const;
  /// The image files run `run`'s dataset lists (images/trn_files.txt, tst_files.txt, lbl_files.txt): for every
  /// query in dataset_queries' order and every label, its files (none for an item without, or a split without a
  /// list). For thumbnails; the files are not opened.
  struct DatasetImageFiles {
    std::vector<std::vector<std::string>> queries, labels;
    bool any() const;
  };
  DatasetImageFiles dataset_image_files(std::int64_t run) const;
  static DatasetSummary summarize_dataset_folder(const std::filesystem::path& folder);
  /// Whether `folder` has image banks (images/*.npy) for the images.* keys to act on; false for anything
  /// unreadable (never throws: the launch form asks on every edit).
  static bool dataset_folder_has_images(const std::filesystem::path& folder);
  static void build_wordnet_dataset_folder(const WordnetBuildOptions& options, const std::filesystem::path& out,
                                           Progress& progress = silent_progress());
  /// `xmc dataset build synthetic` into `out`: a set shaped like the LF sets, from a seed (synthetic_builder.h).
  static void build_synthetic_dataset_folder(const SyntheticBuildOptions& options, const std::filesystem::path& out,
                                             Progress& progress = silent_progress());
  static void import_mulan_dataset_folder(const MulanImportOptions& options, const std::filesystem::path& out,
                                          Progress& progress = silent_progress());

  // ---- reports ------------------------------------------------------------------------------------
  RunReportContent report_content(std::int64_t run) const;

 private:
  RunStore& store() const;

  std::filesystem::path db_path_;
  mutable std::unique_ptr<RunStore> store_;
};

}  // namespace xmc
