#include "widgets/plots/evaluation_view.h"


#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QSettings>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>

#include "widgets/plots/metric_plot.h"

namespace xmc::gui {
namespace {

constexpr int kMostCurvesInOneChart = 4;  // automatic layout: more curves than this get a panel per metric
constexpr int kMostPanelColumns = 3;

QStringList default_metrics(const QStringList& available) {
  QStringList chosen;
  for (const QString& m : available)
    if (MetricPlot::shown_by_default(m)) chosen.append(m);
  if (chosen.isEmpty()) chosen = available.mid(0, 3);  // a run evaluated at other k: its first metrics
  return chosen;
}

}  // namespace

EvaluationView::EvaluationView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* bar = new QHBoxLayout;
  metrics_button_ = new QToolButton;
  metrics_button_->setObjectName("evaluation_metrics");
  metrics_button_->setText(tr("Metrics"));
  metrics_button_->setToolTip(tr("Which metrics to draw"));
  metrics_button_->setPopupMode(QToolButton::InstantPopup);
  metrics_menu_ = new QMenu(metrics_button_);
  metrics_button_->setMenu(metrics_menu_);
  modes_button_ = new QToolButton;
  modes_button_->setObjectName("evaluation_modes");
  modes_button_->setText(tr("Modes"));
  modes_button_->setToolTip(tr("Which inference modes to draw (the run's headline numbers are its primary mode's)"));
  modes_button_->setPopupMode(QToolButton::InstantPopup);
  modes_menu_ = new QMenu(modes_button_);
  modes_button_->setMenu(modes_menu_);
  layout_box_ = new QComboBox;
  layout_box_->setObjectName("evaluation_layout");
  layout_box_->addItem(tr("automatic"), static_cast<int>(Layout::automatic));
  layout_box_->addItem(tr("one chart"), static_cast<int>(Layout::one_chart));
  layout_box_->addItem(tr("a panel per metric"), static_cast<int>(Layout::panel_per_metric));
  layout_box_->addItem(tr("a panel per mode"), static_cast<int>(Layout::panel_per_mode));
  layout_box_->setToolTip(tr("automatic: one chart up to %1 curves, then a small panel per metric").arg(kMostCurvesInOneChart));
  connect(layout_box_, &QComboBox::activated, this,
          [this](int index) { set_layout(static_cast<Layout>(layout_box_->itemData(index).toInt())); });
  note_ = new QLabel;
  note_->setObjectName("evaluation_note");
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #555"));
  bar->addWidget(metrics_button_);
  bar->addWidget(modes_button_);
  bar->addWidget(new QLabel(tr("Layout:")));
  bar->addWidget(layout_box_);
  bar->addWidget(note_, 1);
  layout->addLayout(bar);

  stack_ = new QStackedWidget;
  chart_ = new MetricPlot;
  chart_->setObjectName("live_metrics");
  // The chart's own right-click "Show metrics" is the same choice as the Metrics button.
  connect(chart_, &MetricPlot::metric_visibility_changed, this, [this](const QString& metric, bool visible) {
    if (!rendering_ && visible != chosen_metrics().contains(metric)) set_metric_chosen(metric, visible);
  });
  stack_->addWidget(chart_);
  panel_area_ = new QScrollArea;
  panel_area_->setObjectName("evaluation_panels");
  panel_area_->setWidgetResizable(true);
  panel_host_ = new QWidget;
  panel_grid_ = new QGridLayout(panel_host_);
  panel_grid_->setContentsMargins(0, 0, 0, 0);
  panel_area_->setWidget(panel_host_);
  stack_->addWidget(panel_area_);
  layout->addWidget(stack_, 1);
  rebuild_menus();
  render();
}

QString EvaluationView::label_of(const xmc::ModeSeries& mode) const {
  return mode.mode.empty() ? tr("primary mode") : QString::fromStdString(mode.mode) + tr(" mode");
}

QStringList EvaluationView::metric_names() const {
  QStringList names;
  std::set<QString> seen;
  for (const auto& mode : modes_)
    for (const auto& p : mode.points) {
      const QString m = QString::fromStdString(p.metric);
      if (seen.insert(m).second) names.append(m);
    }
  MetricPlot::sort_metrics(names);
  return names;
}

QStringList EvaluationView::mode_names() const {
  QStringList names;
  for (const auto& mode : modes_) names.append(label_of(mode));
  return names;
}

QStringList EvaluationView::chosen_metrics() const { return drawn_metrics(); }

QStringList EvaluationView::chosen_modes() const {
  QStringList names;
  for (const auto* mode : drawn_modes()) names.append(label_of(*mode));
  return names;
}

QStringList EvaluationView::drawn_metrics() const {
  const QStringList available = metric_names();
  if (!metrics_chosen_by_user_) return default_metrics(available);
  QStringList drawn;
  for (const QString& m : available)
    if (chosen_metrics_.contains(m)) drawn.append(m);
  return drawn;
}

std::vector<const xmc::ModeSeries*> EvaluationView::drawn_modes() const {
  std::vector<const xmc::ModeSeries*> drawn;
  for (const auto& mode : modes_)
    if (chosen_modes_.contains(label_of(mode))) drawn.push_back(&mode);
  // By default every mode that was the primary at some evaluation (NGAME: the embedding's curve through M1 beside the
  // fused ranking's from M4), else the lead one.
  if (drawn.empty())
    for (const auto& mode : modes_)
      if (mode.primary_at_some_evaluation) drawn.push_back(&mode);
  if (drawn.empty() && !modes_.empty()) drawn.push_back(&modes_.front());
  return drawn;
}

void EvaluationView::set_metric_chosen(const QString& metric, bool chosen) {
  if (!metrics_chosen_by_user_) chosen_metrics_ = drawn_metrics();  // the first choice starts from the defaults
  metrics_chosen_by_user_ = true;
  chosen_metrics_.removeAll(metric);
  if (chosen) chosen_metrics_.append(metric);
  save_choices();
  rebuild_menus();
  render();
}

void EvaluationView::set_mode_chosen(const QString& mode, bool chosen) {
  if (chosen_modes_.isEmpty()) chosen_modes_ = chosen_modes();  // starts from what is drawn (the primary)
  chosen_modes_.removeAll(mode);
  if (chosen) chosen_modes_.append(mode);
  save_choices();
  rebuild_menus();
  render();
}

void EvaluationView::set_layout(Layout layout) {
  layout_ = layout;
  layout_box_->setCurrentIndex(layout_box_->findData(static_cast<int>(layout)));
  save_choices();
  render();
}

void EvaluationView::keep_choices_in(const QString& key) {
  settings_key_ = key;
  if (key.isEmpty()) return;
  const QSettings settings;
  if (settings.contains(key + "/metrics")) {
    chosen_metrics_ = settings.value(key + "/metrics").toStringList();
    metrics_chosen_by_user_ = true;
  }
  chosen_modes_ = settings.value(key + "/modes").toStringList();
  const int layout = settings.value(key + "/layout", static_cast<int>(Layout::automatic)).toInt();
  if (const int index = layout_box_->findData(layout); index >= 0) {  // a value another version wrote is ignored
    layout_ = static_cast<Layout>(layout);
    layout_box_->setCurrentIndex(index);
  }
  rebuild_menus();
  render();
}

void EvaluationView::save_choices() const {
  if (settings_key_.isEmpty()) return;
  QSettings settings;
  if (metrics_chosen_by_user_) settings.setValue(settings_key_ + "/metrics", chosen_metrics_);
  settings.setValue(settings_key_ + "/modes", chosen_modes_);
  settings.setValue(settings_key_ + "/layout", static_cast<int>(layout_));
}

EvaluationView::Layout EvaluationView::effective_layout() const {
  if (layout_ != Layout::automatic) return layout_;
  const auto curves = static_cast<int>(drawn_metrics().size() * drawn_modes().size());
  return curves > kMostCurvesInOneChart ? Layout::panel_per_metric : Layout::one_chart;
}

void EvaluationView::set_modes(const std::vector<xmc::ModeSeries>& modes) {
  modes_ = modes;
  rebuild_menus();
  render();
}

void EvaluationView::set_milestones(const std::vector<std::pair<double, QString>>& milestones) {
  milestones_ = milestones;
  chart_->set_milestones(milestones);
  for (MetricPlot* panel : panels_) panel->set_milestones(milestones);
}

void EvaluationView::clear() {
  modes_.clear();
  milestones_.clear();
  chart_->clear();
  rebuild_menus();
  render();
}

void EvaluationView::rebuild_menus() {
  metrics_menu_->clear();
  const QStringList drawn = drawn_metrics();
  for (const QString& m : metric_names()) {
    QAction* a = metrics_menu_->addAction(m);
    a->setCheckable(true);
    a->setChecked(drawn.contains(m));
    connect(a, &QAction::triggered, this, [this, m](bool on) { set_metric_chosen(m, on); });
  }
  metrics_button_->setEnabled(!metrics_menu_->isEmpty());
  metrics_button_->setText(tr("Metrics (%1 of %2)").arg(drawn.size()).arg(metric_names().size()));
  modes_menu_->clear();
  const QStringList drawn_mode_names = chosen_modes();
  for (std::size_t i = 0; i < modes_.size(); ++i) {
    const QString name = label_of(modes_[i]);
    QAction* a = modes_menu_->addAction(i == 0 && modes_.size() > 1 ? name + tr(" (primary)") : name);
    a->setCheckable(true);
    a->setChecked(drawn_mode_names.contains(name));
    connect(a, &QAction::triggered, this, [this, name](bool on) { set_mode_chosen(name, on); });
  }
  modes_button_->setEnabled(modes_.size() > 1);
  modes_button_->setText(tr("Modes (%1 of %2)").arg(drawn_mode_names.size()).arg(modes_.size()));
}

void EvaluationView::render() {
  rendering_ = true;
  const QStringList metrics = drawn_metrics();
  const auto modes = drawn_modes();
  const Layout layout = modes.empty() ? Layout::one_chart : effective_layout();

  // Show one mode's points as the solid curves and the others overlaid, on `plot`.
  auto draw = [&](MetricPlot* plot, const std::vector<const xmc::ModeSeries*>& shown, const QStringList& shown_metrics) {
    plot->clear_comparisons();
    plot->show_only_metrics(shown_metrics);
    plot->set_run_label(shown.size() > 1 ? label_of(*shown.front()) : tr("this run"));
    plot->set_evaluations(shown.empty() ? std::vector<xmc::EvalPoint>{} : shown.front()->points);
    for (std::size_t i = 1; i < shown.size(); ++i) plot->add_comparison_run(label_of(*shown[i]), shown[i]->points);
    plot->set_milestones(milestones_);
  };

  for (MetricPlot* panel : panels_) panel->deleteLater();
  panels_.clear();
  if (layout == Layout::one_chart) {
    draw(chart_, modes, metrics);
    stack_->setCurrentWidget(chart_);
  } else {
    draw(chart_, modes, metrics);  // kept current for export
    const bool per_metric = layout == Layout::panel_per_metric;
    const int count = per_metric ? static_cast<int>(metrics.size()) : static_cast<int>(modes.size());
    const int columns = std::clamp(static_cast<int>(std::ceil(std::sqrt(static_cast<double>(count)))), 1, kMostPanelColumns);
    for (int i = 0; i < count; ++i) {
      auto* panel = new MetricPlot(panel_host_);
      panel->set_compact(true);
      if (per_metric) {
        panel->set_title(metrics[i]);
        draw(panel, modes, QStringList{metrics[i]});
      } else {
        panel->set_title(label_of(*modes[static_cast<std::size_t>(i)]));
        draw(panel, {modes[static_cast<std::size_t>(i)]}, metrics);
      }
      panel_grid_->addWidget(panel, i / columns, i % columns);
      panels_.push_back(panel);
    }
    stack_->setCurrentWidget(panel_area_);
  }
  // Modes evaluated once (NGAME's fused ranking at the end of M4) are a lone marker: say so.
  QStringList lone;
  for (const auto* mode : modes) {
    std::set<double> epochs;
    for (const auto& p : mode->points) epochs.insert(p.epoch);
    if (epochs.size() == 1 && modes.size() > 1)
      lone.append(tr("%1: evaluated once, at epoch %2").arg(label_of(*mode)).arg(*epochs.begin(), 0, 'g', 4));
  }
  note_->setText(lone.join(QStringLiteral("; ")));
  rendering_ = false;
}

}  // namespace xmc::gui
