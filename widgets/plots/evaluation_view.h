#pragma once
// EvaluationView: a run's evaluation metrics by epoch, per inference mode, with the user choosing which
// metrics and which modes are drawn and how: one chart (modes told apart by line style), a small panel per
// metric (each mode a curve in it) or a small panel per mode. By default P@1, P@5 and PSP@5 of the primary
// mode in one chart; "automatic" switches to a panel per metric once more than four curves are chosen.
// The choices outlive the run shown (a user comparing runs one after another keeps the same view).
#include <QStringList>
#include <QWidget>
#include <string>
#include <utility>
#include <vector>

#include "engine/records/evaluation_modes.h"

class QComboBox;
class QGridLayout;
class QLabel;
class QMenu;
class QScrollArea;
class QStackedWidget;
class QToolButton;

namespace xmc::gui {

class MetricPlot;

class EvaluationView : public QWidget {
  Q_OBJECT
 public:
  enum class Layout { automatic, one_chart, panel_per_metric, panel_per_mode };

  explicit EvaluationView(QWidget* parent = nullptr);

  /// The run's points split by mode (xmc::series_by_mode: the primary mode first). Replaces what is shown.
  void set_modes(const std::vector<xmc::ModeSeries>& modes);
  /// Marks where the training schedule changes, on every chart.
  void set_milestones(const std::vector<std::pair<double, QString>>& milestones);
  void clear();

  /// Metrics the run reported, in display order; modes as labelled ("emb mode", "primary mode").
  QStringList metric_names() const;
  QStringList mode_names() const;
  QStringList chosen_metrics() const;
  QStringList chosen_modes() const;
  void set_metric_chosen(const QString& metric, bool chosen);
  void set_mode_chosen(const QString& mode, bool chosen);
  void set_layout(Layout layout);
  /// The layout drawn (automatic resolved).
  Layout effective_layout() const;
  /// From now on keeps the chosen metrics, modes and layout in QSettings under `key` ("live/evaluation"), and takes
  /// those kept there now: a view the user set up comes back after a restart. Empty (the default): nothing kept.
  void keep_choices_in(const QString& key);

  /// The one-chart view (object name "live_metrics"): also what "Export plots" writes.
  MetricPlot* chart() const { return chart_; }
  /// The panels drawn in a panel layout (empty in the one-chart layout), their titles the metric or mode.
  std::vector<MetricPlot*> panels() const { return panels_; }

 private:
  void rebuild_menus();
  void render();
  /// The modes drawn: the chosen ones that the run has, the primary one when none is chosen.
  std::vector<const xmc::ModeSeries*> drawn_modes() const;
  QStringList drawn_metrics() const;
  QString label_of(const xmc::ModeSeries& mode) const;
  void save_choices() const;

  std::vector<xmc::ModeSeries> modes_;
  std::vector<std::pair<double, QString>> milestones_;
  QStringList chosen_metrics_;  // empty until the user chooses: P@1, P@5, PSP@5 (or the first metrics there are)
  bool metrics_chosen_by_user_ = false;
  QStringList chosen_modes_;    // by label; empty: the primary mode
  Layout layout_ = Layout::automatic;
  bool rendering_ = false;  // render() sets the charts' metrics: not a choice of the user's
  QString settings_key_;    // keep_choices_in()

  QToolButton* metrics_button_ = nullptr;
  QToolButton* modes_button_ = nullptr;
  QMenu* metrics_menu_ = nullptr;
  QMenu* modes_menu_ = nullptr;
  QComboBox* layout_box_ = nullptr;
  QLabel* note_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  MetricPlot* chart_ = nullptr;
  QScrollArea* panel_area_ = nullptr;
  QWidget* panel_host_ = nullptr;
  QGridLayout* panel_grid_ = nullptr;
  std::vector<MetricPlot*> panels_;
};

}  // namespace xmc::gui
