#pragma once
// MetricPlot: evaluation metrics of a run against the epoch, in percent as papers report them.
// One curve per metric (P@1, P@5 and PSP@5 shown by default; every other metric one right click away under
// "Show metrics"). A metric family shares a hue and k is told apart by marker shape, so
// P@1/P@3/P@5 read as one family. Other runs can be overlaid for comparison as dashed curves in the same
// colours; the legend then explains the line styles. Hovering a point shows its exact value.
#include <QColor>
#include <QMenu>
#include <QString>
#include <QStringList>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/records/run_records.h"
#include "widgets/plots/plot_export.h"

namespace xmc::gui {

class MetricPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit MetricPlot(QWidget* parent = nullptr);

  /// One evaluation of the run: metric name → value as a fraction (0.4 is drawn at 40 %).
  /// Re-adding an epoch adds a second point at that epoch (the store never does).
  void add_evaluation(double epoch, const std::vector<std::pair<std::string, double>>& metrics);
  /// Replaces the run's curves with the run store's evaluations (fractions).
  void set_evaluations(const std::vector<xmc::EvalPoint>& points);
  /// Overlays another run as dashed curves (dotted, dash-dotted for a third and fourth); adding a run
  /// with a label already shown replaces its curves.
  void add_comparison_run(const QString& run_label, const std::vector<xmc::EvalPoint>& points);
  /// Comparing runs with one colour each (as every chart of the Compare view does): the run's curves take
  /// `colour`, metric families are told apart by line style (P solid, nDCG dashed, PSP dotted, ...) and k
  /// by marker. Called before adding the run; the comparison overload takes its run's colour.
  void set_run_colour(const QColor& colour);
  void add_comparison_run(const QString& run_label, const std::vector<xmc::EvalPoint>& points, const QColor& colour);
  /// A shaded band of ± `spread` (fractions, by metric and epoch) around the curves of `run_label` — the
  /// plotted run's label or an overlaid run's: seeds' mean ± sd. Call after the run's curves are set; replaces
  /// that run's earlier bands. A point of `spread` at an epoch the curve lacks is left out.
  void set_band(const QString& run_label, const std::vector<xmc::EvalPoint>& spread);
  /// The band around `run_label`'s curve of `metric`: its lower and upper edges (percent), nullptr when none.
  std::pair<QCPGraph*, QCPGraph*> band_graphs(const QString& run_label, const QString& metric) const;
  /// Removes every overlaid run.
  void clear_comparisons();
  /// Removes everything (curves of the run and of the overlaid runs).
  void clear();

  /// Vertical marks at epochs where the training schedule changes ("M4: classifiers" at 5), labelled at the
  /// top; replaces earlier ones. clear() removes them.
  void set_milestones(const std::vector<std::pair<double, QString>>& milestones);
  /// The marks shown, for tests.
  std::vector<std::pair<double, QString>> milestones() const { return milestone_list_; }

  /// Names the plotted run in the legend when runs are compared ("this run" by default).
  void set_run_label(const QString& label);

  /// Shows or hides a metric (and its curves in the overlaid runs); also reachable by right click.
  void set_metric_visible(const QString& metric, bool visible);
  bool metric_visible(const QString& metric) const;
  /// Shows exactly `metrics`, now and for metrics that arrive later (instead of shown_by_default()).
  void show_only_metrics(const QStringList& metrics);
  /// The chart's title ("Evaluation" by default).
  void set_title(const QString& title);
  /// Every metric seen so far, in display order (P, nDCG, PSP, PSnDCG, R, others; then by k).
  QStringList metric_names() const;
  /// True for the metrics shown until the user decides otherwise: P@1, P@5 and PSP@5 (nDCG@1 equals P@1,
  /// and a dozen curves read as none).
  static bool shown_by_default(const QString& metric);
  /// Sorts metric names in display order (P, nDCG, PSP, PSnDCG, R, others; then by k).
  static void sort_metrics(QStringList& metrics);

  /// The run's curve of `metric` (values in percent), nullptr when unknown. For tests and restyling.
  QCPGraph* metric_graph(const QString& metric) const;
  /// An overlaid run's curve of `metric`, nullptr when unknown.
  QCPGraph* comparison_graph(const QString& run_label, const QString& metric) const;
  int comparison_count() const { return static_cast<int>(comparisons_.size()); }

  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;
  /// The smallest size at which one metric still reads (panels of the Evaluation view); the default is a
  /// chart of many.
  void set_compact(bool compact) { compact_ = compact; updateGeometry(); }

 Q_SIGNALS:
  /// The user (or show_only_metrics / set_metric_visible) showed or hid `metric`.
  void metric_visibility_changed(const QString& metric, bool visible);

 private:
  struct Series {
    QString metric;
    QCPGraph* graph = nullptr;   // this run
    QAction* toggle = nullptr;   // "Show metrics" entry
  };
  struct Comparison {
    QString label;
    Qt::PenStyle style = Qt::DashLine;
    std::optional<QColor> colour;                        // colour-by-run mode
    std::vector<std::pair<QString, QCPGraph*>> graphs;  // metric → curve
    QCPGraph* legend_key = nullptr;                     // data-less curve explaining the line style
  };

  struct Band {
    QString run;
    QString metric;
    QCPGraph* lower = nullptr;
    QCPGraph* upper = nullptr;  // filled down to `lower`
  };
  std::vector<Band> bands_;
  void remove_bands(const QString& run_label);

  Series& series(const QString& metric);
  const Series* find_series(const QString& metric) const;
  QCPGraph* make_graph(const QString& metric, Qt::PenStyle style, const std::optional<QColor>& colour = std::nullopt);
  /// Pens `g` as `metric`'s curve: by family colour and run line style, or by run colour and family style.
  void style_graph(QCPGraph* g, const QString& metric, Qt::PenStyle style, const std::optional<QColor>& colour);
  void refresh();
  void update_legend();
  void rescale();
  void show_tooltip(QMouseEvent* event);

  QString run_label_;
  std::optional<QColor> run_colour_;  // set: colour-by-run mode (the Compare view)
  std::map<QString, QCPGraph*> metric_keys_;  // colour-by-run mode: data-less grey legend entries, by metric
  std::vector<Series> series_;  // sorted in display order
  std::vector<Comparison> comparisons_;
  QCPGraph* run_legend_key_ = nullptr;
  QCPLegend* run_legend_ = nullptr;  // line styles of the compared runs, in a row under the metrics
  QMenu* metrics_menu_ = nullptr;
  std::vector<std::pair<double, QString>> milestone_list_;
  std::vector<QCPAbstractItem*> milestone_items_;  // a line and a label per mark
  std::optional<QStringList> only_metrics_;  // show_only_metrics(): the chosen set replaces the defaults
  QCPTextElement* title_ = nullptr;
  bool compact_ = false;
};

}  // namespace xmc::gui
