#pragma once
// CompareView: two or more runs side by side.
//   - a metric table: one row per metric (P@1, P@3, P@5, nDCG@k, PSP@k, PSnDCG@k, R@k, ...), one column
//     per run, each run's final value in %, the best value of every row in bold;
//   - the metric curves of all runs overlaid (MetricPlot: the first run solid, the others dashed),
//     starting with P@1, P@5 and PSP@5 shown (right click shows the others);
//   - the decile-wise P@5 bars of up to DecilePlot::kMaxRuns runs side by side in every bin;
//   - the (smoothed) training-loss curves, one panel per kind of loss;
//   - the config keys whose values differ between the runs, and a scatter of one of them against a metric.
// Every chart gives a run the same colour as its column in the table.
// The plots overlay at most kMaxOverlaidRuns runs and the decile bars as many as DecilePlot::kMaxRuns; the view says so
// when it leaves runs out. The table always shows every run.
#include <QColor>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/records/run_records.h"
#include "widgets/plots/plot_export.h"

class QAbstractItemModel;
class QCPMarginGroup;
class QComboBox;
class QCustomPlot;
class QTableWidget;
class QLabel;
class QSplitter;
class QTableView;
class QToolButton;

namespace xmc {
class Session;
}

namespace xmc::gui {

class DecilePlot;
class MetricPlot;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  /// Runs the curve plots overlay (the metric plot has four line styles).
  static constexpr int kMaxOverlaidRuns = 4;

  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;

  /// Reads the runs from `session` (in the order given; duplicates and unknown ids are left out and
  /// named in the note) and shows them. Store errors show in the note, never as exceptions.
  void set_runs(const Session& session, std::vector<std::int64_t> runs);
  /// The runs shown, in column order.
  const std::vector<std::int64_t>& runs() const { return runs_; }
  /// What the view says about runs it left out of plots, unknown ids or store errors ("" when none).
  QString note() const;

  /// The metric table's model: rows = metrics, columns = runs; DisplayRole is the final value in % with
  /// two decimals, Qt::FontRole bold marks the best value of the row, Qt::UserRole the raw fraction.
  QAbstractItemModel* metric_model() const;
  QTableView* metric_table() const { return table_; }
  MetricPlot* metric_plot() const { return metric_plot_; }
  DecilePlot* decile_plot() const { return decile_plot_; }
  QCustomPlot* loss_plot() const { return loss_plot_; }
  /// The metric table as a file's text: "csv" (final values in %, a header of run names) or "latex" (a
  /// tabular with the best value of each row in bold, for a paper). Right-click on the table saves either.
  QString metric_table_text(const QString& format) const;
  /// The panels a comparison figure can hold: "metric table", "metric curves", "decile bars", "training loss",
  /// "scatter", "parallel coordinates".
  static QStringList figure_panel_names();
  /// Lays the named panels out afresh as one figure at `options`' physical size and type size (export_panels)
  /// and writes it to `path` (.png, .svg, .pdf): what "Export the comparison" writes after asking which
  /// panels, how wide and at what type size.
  bool export_comparison_figure(const QString& path, const QStringList& panels, const FigureOptions& options, QString* error = nullptr) const;
  /// The config keys whose values differ between the shown runs (rows of the configuration table).
  QStringList config_difference_keys() const;
  /// The scatter of a config key (x) against a metric's final value in % (y), a point per run: choose
  /// them (as the two combo boxes above it do), and read the points (in column order, runs without the
  /// metric left out).
  void set_scatter(const QString& key, const QString& metric);
  const std::vector<std::pair<double, double>>& scatter_points() const { return scatter_points_; }
  /// The parallel-coordinates lines: per run, its position (0 = the axis's smallest value, 1 = its largest;
  /// NaN = missing) on every numeric config key that differs, then on the scatter's metric.
  const std::vector<std::vector<double>>& parallel_lines() const { return parallel_lines_; }
  /// The loss panels, one per kind of loss ("triplet", "unidec supcon", ...), top to bottom.
  QStringList loss_kinds() const { return loss_kinds_; }

  /// Seeds together: the metric curves draw each group of runs whose configs differ only in their seed as
  /// its mean, in a shaded band of ± the sample sd (a group of one is its run's curve). The toggle above the
  /// curves is enabled when some group has two runs or more.
  void set_seed_bands(bool on);
  bool seed_bands() const { return seed_bands_; }
  /// The groups' names as the curves' legend shows them ("lr=0.001 — 3 seeds"), in column order of their
  /// first runs; one per run when no two runs share a config.
  QStringList seed_group_labels() const;

 private:
  /// Asks which panels, how wide and at what type size, then for a file, and exports the figure.
  void ask_and_export_figure();
  class MetricTableModel;

  /// Reads the shown runs' losses into loss_series_ (smoothed), lays out one panel per kind of loss, and draws them.
  void show_loss(const Session& session);
  /// Draws loss_series_: one curve per run, or with seed bands on one per seed group, its mean ± sd as a band.
  void draw_losses();
  void show_config_differences(const Session& session);
  void update_scatter();
  void update_parallel(int metric_row);
  /// Each shown run's value of config key `key` as a number (NaN where its config lacks the key); nullopt
  /// when a run's value is not a number.
  std::optional<std::vector<double>> numeric_config_values(const std::string& key) const;

  /// Draws the metric curves: one per run, or per seed group with seed_bands_ (from the cached runs);
  /// `headline_metrics` shows P@1, P@5 and PSP@5 only, else the metrics shown stay.
  void draw_metric_curves(bool headline_metrics);
  /// The decile bars of the first runs, or with seed bands on of the first seed groups (each the mean of its runs'
  /// bins), in the runs' (groups') colours.
  void draw_decile_bars();
  struct CurveRun {
    std::int64_t id = 0;
    QString label;
    QColor colour;
    std::vector<EvalPoint> evaluations;
    std::string seedless_config;  ///< the config without seed and name: equal for seeds of one setting
    std::map<std::string, std::string> seedless_flat;  ///< the same, flattened, to name groups by what differs
  };
  std::vector<CurveRun> curve_runs_;  ///< in column order
  std::vector<std::vector<double>> decile_bins_;  ///< per run (column order): its latest decile table of decile_metric_ (empty: none)
  std::string decile_metric_ = "P@5";
  /// Runs (indices into curve_runs_) by seed group, groups in order of their first run.
  std::vector<std::vector<std::size_t>> seed_groups() const;
  QString seed_group_label(const std::vector<std::size_t>& group, const std::vector<std::vector<std::size_t>>& groups) const;
  bool seed_bands_ = false;
  QToolButton* seed_button_ = nullptr;

  std::vector<std::int64_t> runs_;
  MetricTableModel* model_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* note_ = nullptr;
  QTableView* table_ = nullptr;
  QSplitter* top_ = nullptr;
  MetricPlot* metric_plot_ = nullptr;
  DecilePlot* decile_plot_ = nullptr;
  QCustomPlot* loss_plot_ = nullptr;
  QCPMarginGroup* loss_margins_ = nullptr;
  QStringList loss_kinds_;
  struct LossSeries {
    std::size_t run = 0;   ///< column (curve_runs_) index
    std::size_t kind = 0;  ///< its panel
    std::map<double, double> smoothed;  ///< step -> bias-corrected EMA of the loss
  };
  std::vector<LossSeries> loss_series_;
  QString common_name_;  ///< the start of the name every shown run shares ("" = none)
  QLabel* config_label_ = nullptr;
  QTableWidget* config_table_ = nullptr;
  std::vector<std::map<std::string, std::string>> configs_;  ///< each shown run's config, flattened
  QComboBox* scatter_key_ = nullptr;
  QComboBox* scatter_metric_ = nullptr;
  QCustomPlot* scatter_plot_ = nullptr;
  std::vector<std::pair<double, double>> scatter_points_;
  QCustomPlot* parallel_plot_ = nullptr;
  std::vector<std::vector<double>> parallel_lines_;
};

}  // namespace xmc::gui
