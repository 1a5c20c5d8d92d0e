#pragma once
// RunTableModel: the runs of one run store file (through a Session) as a table (one row per run, newest first).
//
// Columns: id, name, status, created, dataset, device, mode (whose numbers the metric columns are: the run's
// primary inference mode at its last evaluation), P@1, P@5, PSP@5 (from the run's evaluations,
// shown in % as papers do; final or best value, see set_metric_value) and last error. refresh()
// re-reads the store and updates rows in place (insert / remove / dataChanged, never a reset when the
// list keeps its order), so views keep their selection and scroll position. Follow mode polls the
// store on a timer, so runs written by another process (`xmc train` on a server writing the same
// SQLite file) appear and update live; every refresh also marks runs whose owning process on this
// host died as failed (Session::reap_orphaned_runs).
//
// Columns of the user's choosing follow the fixed ones (add_column): any metric (final or best, as P@1),
// any config key, and the run's duration.
//
// The name column is editable: setData() renames the run in the store.
// Everything runs on the thread that owns the model (SQLite reads of the run list are milliseconds).
#include <QAbstractTableModel>
#include <QIcon>
#include <QString>
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/records/run_filter.h"
#include "engine/session/session.h"

class QTimer;

namespace xmc::gui {

class RunTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kId, kName, kStatus, kCreated, kMethod, kDataset, kDevice, kMode, kP1, kP5, kPsp5, kTags, kNotes, kLastError, kGroup, kColumnCount };
  /// Which value of an evaluation metric the metric columns show.
  enum class MetricValue { Final, Best };
  /// A column the user added after the fixed ones.
  struct ExtraColumn {
    enum class Kind { metric, config, duration, system } kind = Kind::metric;
    /// The metric ("nDCG@5"), the config key ("encoder.dim"), or for system use kPeakMemory or kMeanCpu;
    /// unused for the duration.
    QString key;
    bool operator==(const ExtraColumn& other) const { return kind == other.kind && key == other.key; }
  };
  /// System-use columns' keys: the training process's peak memory (GB) and mean CPU cores busy.
  static constexpr const char* kPeakMemory = "peak_memory_gb";
  static constexpr const char* kMeanCpu = "mean_cpu_cores";
  /// The group key that gathers runs whose configs differ only in their seed (a published row: mean ± sd).
  static constexpr const char* kSeedGroup = "seeds";
  /// data(index, kSortRole): a value that sorts naturally (numbers as numbers, times as ISO text;
  /// a missing metric sorts below every value).
  static constexpr int kSortRole = Qt::UserRole + 1;
  /// data(index, kRunIdRole): the run id (qint64) on every column.
  static constexpr int kRunIdRole = Qt::UserRole + 2;
  /// data(index, kFilterRole): the text a filter matches on every column — name, dataset path and
  /// status, one per line.
  static constexpr int kFilterRole = Qt::UserRole + 3;

  /// Opens (or creates) the store at `db` and reads it. When the file cannot be opened the model is
  /// empty, last_error() says why and refresh() retries.
  explicit RunTableModel(std::filesystem::path db, QObject* parent = nullptr);
  ~RunTableModel() override;

  const std::filesystem::path& store_path() const { return db_; }
  /// The model's own connection to the store; nullptr while the file could not be opened.
  Session* store() const { return store_.get(); }

  /// Re-reads every run and its evaluations; rows are updated in place. Returns false (and emits
  /// error_occurred) when the store could not be read; the rows then stay as they were.
  bool refresh();
  /// Follow mode: poll the store every `interval_ms` (re-reading evaluations only of runs that are
  /// active or changed since the last poll). Off stops the timer.
  void set_follow(bool on, int interval_ms = 1000);
  bool following() const;

  void set_metric_value(MetricValue which);
  MetricValue metric_value() const { return metric_value_; }

  /// The run shown in `index`'s row (-1 for an invalid index).
  std::int64_t run_id(const QModelIndex& index) const;
  /// Index of the run's row (invalid when it is not listed).
  QModelIndex index_of_run(std::int64_t run, int column = kId) const;
  /// The run as last read; nullptr when it is not listed.
  const RunInfo* run_info(std::int64_t run) const;

  /// Renames the run in the store and updates its row. False (with `error`) on an empty name or a
  /// store error.
  bool rename_run(std::int64_t run, const QString& name, QString* error = nullptr);
  /// Replaces the run's tags by those of `text` (split at commas, trimmed, empty ones dropped).
  bool set_tags(std::int64_t run, const QString& text, QString* error = nullptr);
  /// Groups runs by "method", "dataset", "tag" or any config key ("lr", "encoder.dim"; "" = no grouping):
  /// the Group column shows each run's value, and sorting by it keeps a group's runs together, newest first.
  void set_group_key(const QString& key);

  /// Adds a column after the fixed ones (and the earlier added); false when it is already there.
  bool add_column(const ExtraColumn& column);
  /// Removes an added column (its section, >= kColumnCount); false for a fixed one.
  bool remove_column(int section);
  const std::vector<ExtraColumn>& extra_columns() const { return extra_; }
  /// Every metric any listed run has reported, in no particular order (what a metric column can show).
  std::vector<std::string> metrics_seen() const { return {metrics_seen_.begin(), metrics_seen_.end()}; }
  /// The metric a section shows ("P@1" for kP1, the key of an added metric column); "" for other sections.
  QString metric_of_section(int section) const;
  /// The final or best (by metric_value()) value of `metric` in `run`, a fraction; NaN when the run never
  /// reported it or `metric` is not a column.
  double metric_value_of(std::int64_t run, const QString& metric) const;
  QString group_key() const { return group_key_; }
  /// The run's value for the grouping ("—" when its config has no such key). For kSeedGroup: method,
  /// dataset and the config values that differ between the listed runs ("lr=0.01"), seed aside.
  QString group_of(const RunInfo& info) const;
  /// Whether the run passes a filter expression (engine/records/run_filter.h): its fields, config and last metrics.
  bool passes(std::int64_t run, const RunFilter& filter) const;
  /// Replaces the run's notes.
  bool set_notes(std::int64_t run, const QString& notes, QString* error = nullptr);
  /// Deletes the run and everything recorded for it from the store, and removes its row.
  bool delete_run(std::int64_t run, QString* error = nullptr);

  /// The last store error ("" after a successful refresh).
  QString last_error() const { return last_error_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 Q_SIGNALS:
  /// A store error (open, read, rename, delete), as one line.
  void error_occurred(const QString& message);
  /// After every successful refresh (manual or by follow mode).
  void refreshed();

 private:
  /// Final and best value of one metric over a run's evaluations (NaN = never evaluated).
  struct MetricSummary {
    double final_value, final_epoch, best_value, best_epoch;
  };
  struct Row {
    RunInfo info;
    std::vector<MetricSummary> metrics;  ///< one per metric column
    std::string mode;                    ///< the primary mode at the last evaluation ("" when unnamed)
    std::vector<EvalPoint> last_points;  ///< the last point of every metric it reported (what filters compare)
    bool operator==(const Row& other) const;
  };

  bool open_store();
  /// Applies `change` to the run in the store, then re-reads its row; a failure is reported as by rename_run.
  bool update_run(std::int64_t run, QString* error, const std::function<void(Session&, const RunInfo&)>& change);
  /// True when the store file at db_ is no longer the one that was opened (deleted and recreated, or
  /// replaced by a copy): judged by device and inode, without opening the file.
  bool store_replaced() const;
  void load_rows(bool all_evaluations);
  bool reload(bool all_evaluations);
  Row make_row(RunInfo info, const Row* previous, bool read_evaluations) const;
  void apply(std::vector<Row> rows);
  int row_of(std::int64_t run) const;
  void fail(const QString& message);

  std::filesystem::path db_;
  std::unique_ptr<Session> store_;
  QString method_of(const RunInfo& info) const;                    ///< the method's name, from the config
  mutable std::unordered_map<std::int64_t, QString> method_cache_;  ///< by run id
  /// A run's config flattened to dotted keys ("encoder.dim" → "64"), without its seed and name; by run id.
  mutable std::unordered_map<std::int64_t, std::map<std::string, std::string>> flat_configs_;
  const std::map<std::string, std::string>& flat_config(const RunInfo& info) const;
  /// Config values the run chose while training; read again while it runs and whenever its status changes.
  std::vector<ChosenSetting> chosen_settings_of(const RunInfo& info) const;
  mutable std::unordered_map<std::int64_t, std::pair<RunStatus, std::vector<ChosenSetting>>> ended_chosen_settings_;
  /// The training process's use of the machine; read again while it runs, kept once it has ended.
  SystemUse system_use_of(const RunInfo& info) const;
  mutable std::unordered_map<std::int64_t, std::pair<RunStatus, SystemUse>> ended_system_use_;
  /// By family (a method on a dataset, family_of()): the config keys (seed, name, method and dataset aside) whose
  /// values differ between the family's listed runs, the key taking the most values first — what tells its seed
  /// groups apart. Computed only while grouping by kSeedGroup.
  std::map<QString, std::vector<std::string>> varying_keys_;
  QString family_of(const RunInfo& info) const;
  void update_varying_keys(const std::vector<Row>& rows);
  QString group_key_;
  std::uint64_t opened_device_ = 0, opened_inode_ = 0;  ///< the store file open_store() opened
  std::vector<Row> rows_;
  QTimer* timer_ = nullptr;
  MetricValue metric_value_ = MetricValue::Final;
  QString last_error_;
  mutable std::array<QIcon, 6> status_icons_;  ///< per RunStatus, made on first use
  std::vector<std::string> metric_keys_{"P@1", "P@5", "PSP@5"};  ///< Row::metrics' order: kP1..kPsp5, then added metric columns
  std::vector<ExtraColumn> extra_;
  mutable std::set<std::string> metrics_seen_;
  /// The row's summary of `metric_keys_[slot]` as a cell of `role`.
  QVariant metric_cell(const Row& row, std::size_t slot, int role) const;
  QVariant extra_cell(const Row& row, const ExtraColumn& column, int role) const;
};

}  // namespace xmc::gui
