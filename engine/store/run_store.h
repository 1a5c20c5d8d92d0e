#pragma once
// RunStore: the SQLite file that is the source of truth for training runs — their configuration,
// status, per-step scalars, evaluations, decile tables, t-SNE snapshots and artifacts.
//
// Several processes may open the same file at once (WAL journal, 10 s busy timeout): a trainer
// writes while the GUI or `xmc run watch` follows it with scalars(run, key, after_step). Every write
// is one transaction, so a crash leaves each call either fully recorded or not at all.
// One RunStore is safe to share between threads (calls are serialised), but must not be carried
// across fork(): open a new one in each process.
// Every method throws xmc::Error (xmc::InputError for open/schema problems) naming the database path.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/records/run_records.h"
#include "engine/store/store_schema.h"

namespace xmc {

class RunStore {
 public:
  /// Schema version this code reads and writes (PRAGMA user_version).
  static constexpr int kSchemaVersion = store::kSchemaVersion;

  /// Opens or creates the store at `db_path` (creating missing parent folders) and upgrades an older
  /// schema. Throws xmc::InputError if the file is not a run store or was written by a newer version.
  explicit RunStore(const std::filesystem::path& db_path);
  ~RunStore();
  RunStore(RunStore&&) noexcept;
  RunStore& operator=(RunStore&&) noexcept;
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  /// Inserts a run with status Created owned by this process (host, pid, code version); returns its id.
  std::int64_t create_run(const NewRun& run);
  /// Sets the status; a non-empty `error` replaces last_error, and Completed or Stopped without one clears it
  /// (a run that finished or stopped cleanly after a resume is no longer described by its old error). Running also makes this process the
  /// owner (host, pid) and beats the heartbeat. Throws if the run does not exist.
  void set_status(std::int64_t run, RunStatus status, const std::string& error = {});
  /// Claims the run for training by this process in one UPDATE: created, stopped or failed → running (owner
  /// host and pid, heartbeat). Throws xmc::ConfigError naming the owner when another process holds it
  /// ("run 3 is being trained by process 812 on host h"), or when it is completed. Two claimants: one wins.
  void claim_run(std::int64_t run);
  /// Forgets what was recorded after a checkpoint the run resumes from, in one transaction: scalars and
  /// evaluations and log lines after `step`, decile tables and t-SNE snapshots after `epoch` (a resumed run
  /// records them again).
  void discard_after(std::int64_t run, std::int64_t step, double epoch);
  /// set_status(run, Failed, error); an empty error is recorded as "failed without an error message".
  void mark_failed(std::int64_t run, const std::string& error);
  /// Records that the owner is alive now. Throws if the run does not exist.
  void heartbeat(std::int64_t run);
  /// Renames a run; throws if the name is empty or the run does not exist.
  void rename_run(std::int64_t run, const std::string& name);
  /// Records a sweep and its points (no runs yet); returns its id.
  std::int64_t create_sweep(const std::string& name, const std::string& config_json, const std::string& grid_json,
                            const std::vector<std::vector<std::string>>& points);
  /// Records the run that trains point `position` of sweep `sweep`.
  void set_sweep_point_run(std::int64_t sweep, std::int64_t position, std::int64_t run);
  std::optional<SweepInfo> find_sweep(std::int64_t sweep) const;
  /// Every sweep, newest first.
  std::vector<SweepInfo> list_sweeps() const;
  /// Replaces the run's notes (UTF-8 text, at most 64 KiB; "" clears them).
  void set_notes(std::int64_t run, const std::string& notes);
  /// Adds tags to the run (already present ones are kept once). A tag is 1–64 bytes of UTF-8 without line
  /// breaks or outer spaces; an invalid one is refused with its text, and none of the list is added.
  void add_tags(std::int64_t run, const std::vector<std::string>& tags);
  /// Removes tags from the run (absent ones are ignored).
  void remove_tags(std::int64_t run, const std::vector<std::string>& tags);
  /// Deletes a run and everything recorded for it. Throws if the run does not exist.
  void delete_run(std::int64_t run);

  /// The run, or nullopt when there is none with that id.
  std::optional<RunInfo> find_run(std::int64_t run) const;
  /// The run; throws xmc::Error naming the id when there is none.
  RunInfo get_run(std::int64_t run) const;
  /// All runs, newest first.
  std::vector<RunInfo> list_runs() const;
  /// The runs whose config's `method` is one of `methods`, newest first: found by SQLite from the stored
  /// JSON, so a store of many runs is not read whole to find a few.
  std::vector<RunInfo> runs_of_methods(const std::vector<std::string>& methods) const;

  /// Appends points in one transaction (all or none); throws on an empty key or a missing run.
  void add_scalars(std::int64_t run, const std::vector<ScalarPoint>& points);
  /// The same, each point replacing those of its key at its step: a value sampled again at one step (a
  /// process's memory at an epoch's end and again after the final evaluation) is kept once, the later.
  void replace_scalars(std::int64_t run, const std::vector<ScalarPoint>& points);
  /// Points of `key` ("" = every key) with step > after_step, by step then insertion order.
  /// To follow a live run, poll with after_step = the last step already seen for that key.
  std::vector<ScalarPoint> scalars(std::int64_t run, const std::string& key = {},
                                   std::int64_t after_step = -1) const;
  /// Distinct scalar keys recorded for the run, sorted.
  std::vector<std::string> scalar_keys(std::int64_t run) const;
  /// Points whose key starts with `prefix` (non-empty), by step then insertion order; a range of the
  /// (run, key, step) index, so cheap however many steps the run logged.
  std::vector<ScalarPoint> scalars_with_prefix(std::int64_t run, const std::string& prefix) const;

  /// Records one evaluation's metrics in one transaction.
  void add_evaluation(std::int64_t run, double epoch, std::int64_t step,
                      const std::vector<std::pair<std::string, double>>& metrics);
  /// Every evaluation metric of the run, by step then insertion order.
  std::vector<EvalPoint> evaluations(std::int64_t run) const;

  /// Stores a 10-bin decile table; a second table for the same (metric, epoch) replaces the first.
  void add_decile_table(std::int64_t run, double epoch, const std::string& metric, const std::vector<double>& bins);
  /// The 10 bins of the latest epoch's table for `metric`; empty when there is none.
  std::vector<double> latest_decile_table(std::int64_t run, const std::string& metric) const;
  /// All decile tables of the run (metric "" = every metric), by epoch then metric.
  std::vector<DecileTable> decile_tables(std::int64_t run, const std::string& metric = {}) const;

  /// Records a file the run produced (checkpoint, index, report, ...).
  void add_artifact(std::int64_t run, const std::string& kind, const std::string& path);
  /// The run's artifacts in the order they were added.
  std::vector<Artifact> artifacts(std::int64_t run) const;
  /// Path of the most recently added artifact of `kind` (e.g. the checkpoint to resume from).
  std::optional<std::string> latest_artifact(std::int64_t run, const std::string& kind) const;

  /// Keeps a label added to `run`; throws ConfigError naming the earlier one when the run already has a label
  /// added with this text. Returns its row id.
  std::int64_t add_added_label(std::int64_t run, const std::string& text, const std::string& synthesized_by);
  /// The run's added labels, oldest first.
  std::vector<AddedLabel> added_labels(std::int64_t run) const;
  /// Appends a line to the run's log (phases and decisions, in order).
  void add_log_line(std::int64_t run, std::int64_t step, const std::string& message);
  /// The run's log, oldest first.
  std::vector<LogLine> log(std::int64_t run) const;
  /// Forgets an added label; throws ConfigError when the run has none with that row id.
  void remove_added_label(std::int64_t run, std::int64_t id);

  /// Stores a t-SNE snapshot; `payload_json` must be valid JSON.
  void add_tsne_snapshot(std::int64_t run, double epoch, std::int64_t query, const std::string& payload_json);
  /// The snapshot of the highest epoch (latest added among equals); nullopt when none.
  std::optional<TsneSnapshot> latest_tsne_snapshot(std::int64_t run) const;

  /// Marks Failed every Running or Paused run owned by a process on this host that no longer exists (a child
  /// must have been waited for), with last_error "process PID ended without finishing the run
  /// (crashed or killed)". Returns how many runs it marked.
  int reap_orphaned_runs();

  /// The database file.
  const std::filesystem::path& path() const;
  /// The store's identity: 32 hex digits drawn when the store was created (or upgraded to schema 2).
  std::string store_id() const;
  /// Seconds since the Unix epoch, for ScalarPoint::wall_time.
  static double now_seconds();

 private:
  void write_scalars(std::int64_t run, const std::vector<ScalarPoint>& points, bool replace);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
