#pragma once
// RunsBrowser: the runs of one run store file in a sortable, filterable table, with the actions on
// them — Refresh, Follow (poll the store so runs written by other processes appear live), Rename,
// Delete (after a confirmation naming the runs), Compare (two or more selected) and Export (the table,
// or the selected run's scalars and metrics, as CSV). The metric columns show final or best values.
// Right-clicking the header chooses the columns: hide or show any, add any metric, config key or the
// duration. While the runs are grouped ("seeds" gathers runs that differ only in their seed), a summary
// under the table gives each group's mean ± sd over its completed runs.
//
// The data lives in a RunTableModel (model()); the browser only displays it and wires the actions.
// Store errors show in a line under the table, never as a modal dialog from a timer.
#include <QMap>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "widgets/runs/run_filter_proxy.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QModelIndex;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;
class QMenu;
class QToolButton;

namespace xmc::gui {

class RunTableModel;
class GroupSummaryModel;

class RunsBrowser : public QWidget {
  Q_OBJECT
 public:
  /// Asked before deleting; `runs` names each run ("“name” (#id)"). True deletes.
  using DeleteConfirmation = std::function<bool(QWidget* parent, const QStringList& runs)>;

  /// Browses the store at `db` (opened, or created, by the browser's own model).
  explicit RunsBrowser(const std::filesystem::path& db, QWidget* parent = nullptr);
  ~RunsBrowser() override;

  RunTableModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }

  /// Selected runs, in the order the table shows them.
  std::vector<std::int64_t> selected_runs() const;
  /// Selects (only) this run and scrolls to it; false when it is not shown.
  bool select_run(std::int64_t run);
  /// Shows only runs whose name, method, dataset path, status, tags or notes contain `text` (case-insensitive), or,
  /// when `text` compares (`lr < 0.01 and P@1 > 0.6`), the runs that expression lets through
  /// (engine/records/run_filter.h). An expression that does not parse keeps the last filter and says why.
  void set_filter_text(const QString& text);
  /// Why the filter's expression does not parse ("" when it does, or is words to find).
  QString filter_error() const;
  /// Keeps the filter's text under `name` (QSettings, for every store), replacing one of that name.
  void save_filter(const QString& name);
  /// Forgets the saved filter `name`.
  void forget_filter(const QString& name);
  /// Saved filters: name -> text, by name.
  QMap<QString, QString> saved_filters() const;
  /// The menu of saved filters as the star beside the filter shows it (apply one, save this one, forget one), filled
  /// afresh.
  QMenu* saved_filters_menu();
  /// Groups the table by "method", "dataset", "tag" or a config key ("" = no grouping): a Group column
  /// comes first and the rows are sorted by it.
  void set_group_key(const QString& key);
  /// The key the table is grouped by ("" = none).
  QString group_key() const;
  /// The per-group summary shown under the table while grouped.
  GroupSummaryModel* group_summary() const { return summary_; }
  QTableView* summary_view() const { return summary_view_; }
  /// The header's column menu (show/hide every column, add a metric, config or duration column), as a
  /// right click on the header shows it; `section` is the logical column clicked (-1: none).
  QMenu* column_menu(int section);
  /// Replaces the delete confirmation (default: a QMessageBox naming the runs) — e.g. for tests.
  void set_delete_confirmation(DeleteConfirmation confirm);
  /// Writes the rows as shown (filtered, sorted) with a header line; false with `error` on failure.
  bool export_table_csv(const QString& path, QString* error = nullptr) const;

 public Q_SLOTS:
  void refresh();
  void set_follow(bool on);
  /// Starts editing the name of the current run in place.
  void rename_selected();
  /// Opens a dialog with the selected run's notes; saves what is accepted.
  void edit_notes_of_selected();
  /// Shows the selected run's log (its phases and decisions, with the step each came at) in a window of its
  /// own, which stays open beside the table; returns it (null without exactly one selected run).
  QWidget* show_log_of_selected();
  /// Deletes the selected runs after the confirmation; returns how many were deleted.
  int delete_selected();
  /// Emits compare_requested with the selected runs when there are two or more.
  void compare_selected();

 Q_SIGNALS:
  void run_activated(std::int64_t run);
  void compare_requested(std::vector<std::int64_t> runs);
  void selection_changed(std::vector<std::int64_t> runs);

 private:
  void update_actions();
  void update_count();
  void apply_filter_text(const QString& text);
  void show_error(const QString& message);
  void choose_table_csv();
  void choose_run_csv();

  RunTableModel* model_ = nullptr;
  RunFilterProxy* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* filter_error_ = nullptr;
  QToolButton* saved_ = nullptr;
  QPushButton* refresh_ = nullptr;
  QPushButton* follow_ = nullptr;
  QPushButton* rename_ = nullptr;
  QPushButton* notes_ = nullptr;
  QPushButton* log_ = nullptr;
  QComboBox* group_ = nullptr;
  QString group_setting_;  ///< where the grouping is kept for this store ("" until the table is set up)
  QPushButton* delete_ = nullptr;
  QPushButton* compare_ = nullptr;
  QToolButton* export_ = nullptr;
  QComboBox* metric_value_ = nullptr;
  QLabel* count_ = nullptr;
  QLabel* message_ = nullptr;
  GroupSummaryModel* summary_ = nullptr;
  QTableView* summary_view_ = nullptr;
  QLabel* summary_title_ = nullptr;
  QMenu* column_menu_ = nullptr;
  DeleteConfirmation confirm_;
};

}  // namespace xmc::gui
