#include "widgets/plots/metric_plot.h"

#include <QToolTip>
#include <algorithm>
#include <map>
#include <cmath>
#include <limits>
#include <tuple>

#include "widgets/plots/plot_style.h"


namespace xmc::gui {
namespace {

namespace style = plot_style;

constexpr double kHoverRadiusPx = 8;
constexpr int kMinWidthForValues = 600;  // narrower plots name metrics in the legend without their latest value

// "nDCG@5" → ("nDCG", 5); a name without "@k" has k = 0.
std::pair<QString, int> split_metric(const QString& metric) {
  const auto at = metric.lastIndexOf(QLatin1Char('@'));
  if (at < 0) return {metric, 0};
  bool ok = false;
  const int k = metric.mid(at + 1).toInt(&ok);
  return {metric.left(at), ok ? k : 0};
}

int family_rank(const QString& family) {
  static const QStringList order = {QStringLiteral("P"), QStringLiteral("nDCG"), QStringLiteral("PSP"),
                                    QStringLiteral("PSnDCG"), QStringLiteral("R")};
  const auto i = order.indexOf(family);
  return i < 0 ? static_cast<int>(order.size()) : static_cast<int>(i);
}

auto sort_key(const QString& metric) {
  const auto [family, k] = split_metric(metric);
  return std::make_tuple(family_rank(family), family, k);
}

// Okabe–Ito colours per family; k is told apart by marker shape (and a slight shade).
QColor family_colour(const QString& family) {
  switch (family_rank(family)) {
    case 0: return style::kBlue;        // P
    case 1: return style::kVermillion;  // nDCG
    case 2: return style::kGreen;       // PSP
    case 3: return style::kPurple;      // PSnDCG
    case 4: return style::kOrange;      // R
    default: return {0x55, 0x55, 0x55};
  }
}

QCPScatterStyle::ScatterShape shape_for_k(int k) {
  switch (k) {
    case 1: return QCPScatterStyle::ssDisc;
    case 3: return QCPScatterStyle::ssSquare;
    case 5: return QCPScatterStyle::ssTriangle;
    case 10: return QCPScatterStyle::ssDiamond;
    default: return QCPScatterStyle::ssCross;
  }
}

QColor shade_for_k(QColor c, int k) {
  if (k == 1) return c.darker(130);
  if (k == 3) return c.darker(110);
  if (k >= 10) return c.lighter(118);
  return c;
}

QString percent_text(double percent) { return QString::number(percent, 'f', percent < 10 ? 2 : 1) + QLatin1Char('%'); }

}  // namespace

MetricPlot::MetricPlot(QWidget* parent) : QCustomPlot(parent), run_label_(tr("this run")) {
  style::style_plot(this, tr("Evaluation"));
  style::add_empty_note(this, tr("no evaluation yet"));
  QCPAxisRect* rect = axisRect();
  plotLayout()->insertRow(0);
  title_ = style::make_title(this, tr("Evaluation"));
  plotLayout()->addElement(0, 0, title_);
  plotLayout()->setRowStretchFactor(0, 0.001);
  plotLayout()->setRowSpacing(0);

  style::style_axis(xAxis, tr("epoch"));
  style::style_axis(yAxis, tr("metric (%)"));
  xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new style::IntegerTicker));
  xAxis->setNumberFormat(QStringLiteral("f"));
  xAxis->setNumberPrecision(0);
  yAxis->setNumberFormat(QStringLiteral("g"));  // 12.5 stays 12.5 (ticks may fall on halves)
  yAxis->setNumberPrecision(4);
  for (QCPAxis* frame : {xAxis2, yAxis2}) {  // a closed frame reads better around few points
    frame->setVisible(true);
    frame->setTicks(false);
    frame->setSubTicks(false);
    frame->setTickLabels(false);
  }

  // Metrics legend, then the line-style legend of compared runs, each in a centred row of its own.
  setAutoAddPlottableToLegend(false);
  rect->insetLayout()->take(legend);
  style::style_legend(legend);
  style::add_centred_row(this, 2, legend);
  run_legend_ = new QCPLegend;
  style::add_centred_row(this, 3, nullptr)->addElement(0, 1, run_legend_);
  run_legend_->setLayer(QStringLiteral("legend"));
  style::style_legend(run_legend_);
  for (QCPLegend* l : {legend, run_legend_}) l->setIconSize(26, 14);
  connect(this, &QCustomPlot::beforeReplot, this, [this] {
    update_legend();  // entries carry the latest value only where there is room for it
    style::fit_legend_columns(this, legend, 5);
    style::fit_legend_columns(this, run_legend_, 4);
  });

  run_legend_key_ = addGraph();
  run_legend_key_->setPen(QPen(QColor(0x44, 0x44, 0x44), 2, Qt::SolidLine));

  metrics_menu_ = new QMenu(tr("Show metrics"), this);
  addAction(metrics_menu_->menuAction());
  add_export_menu(this, this);

  setMouseTracking(true);
  connect(this, &QCustomPlot::mouseMove, this, &MetricPlot::show_tooltip);
  refresh();
}

QSize MetricPlot::minimumSizeHint() const { return compact_ ? QSize(260, 200) : QSize(440, 340); }
QSize MetricPlot::sizeHint() const { return compact_ ? QSize(360, 260) : QSize(720, 440); }

void MetricPlot::set_title(const QString& title) {
  title_->setText(title);
  replot(QCustomPlot::rpQueuedReplot);
}

void MetricPlot::show_only_metrics(const QStringList& metrics) {
  only_metrics_ = metrics;
  for (const QString& metric : metric_names()) set_metric_visible(metric, metrics.contains(metric));
}

void MetricPlot::sort_metrics(QStringList& metrics) {
  std::stable_sort(metrics.begin(), metrics.end(), [](const QString& a, const QString& b) { return sort_key(a) < sort_key(b); });
}

bool MetricPlot::shown_by_default(const QString& metric) {
  return metric == QLatin1String("P@1") || metric == QLatin1String("P@5") || metric == QLatin1String("PSP@5");
}

QCPGraph* MetricPlot::make_graph(const QString& metric, Qt::PenStyle style, const std::optional<QColor>& colour) {
  QCPGraph* g = addGraph();
  style_graph(g, metric, style, colour);
  g->setName(metric);
  return g;
}

void MetricPlot::style_graph(QCPGraph* g, const QString& metric, Qt::PenStyle style, const std::optional<QColor>& run_colour) {
  const auto [family, k] = split_metric(metric);
  if (run_colour) {  // the run's colour; the family's line style; k's marker
    static const Qt::PenStyle family_styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine, Qt::DashDotDotLine};
    const Qt::PenStyle family_style = family_styles[std::min<int>(family_rank(family), 4)];
    g->setPen(QPen(*run_colour, 1.8, family_style));
    g->setScatterStyle(QCPScatterStyle(shape_for_k(k), QPen(*run_colour, 1.5), QBrush(*run_colour), 7));
    return;
  }
  const QColor colour = shade_for_k(family_colour(family), k);
  g->setPen(QPen(colour, style == Qt::SolidLine ? 2.0 : 1.8, style));
  const bool solid = style == Qt::SolidLine;
  g->setScatterStyle(QCPScatterStyle(shape_for_k(k), QPen(colour, 1.5), solid ? QBrush(colour) : QBrush(Qt::white), 7));
}

void MetricPlot::set_run_colour(const QColor& colour) {
  run_colour_ = colour;
  for (auto& s : series_) style_graph(s.graph, s.metric, Qt::SolidLine, run_colour_);
  run_legend_key_->setPen(QPen(colour, 2.5, Qt::SolidLine));
  refresh();
}

void MetricPlot::add_comparison_run(const QString& run_label, const std::vector<xmc::EvalPoint>& points, const QColor& colour) {
  auto it = std::find_if(comparisons_.begin(), comparisons_.end(), [&](const Comparison& c) { return c.label == run_label; });
  if (it == comparisons_.end()) {
    Comparison c;
    c.label = run_label;
    c.colour = colour;
    c.legend_key = addGraph();
    c.legend_key->setPen(QPen(colour, 2.5, Qt::SolidLine));
    c.legend_key->setName(run_label);
    comparisons_.push_back(c);
  }
  add_comparison_run(run_label, points);
}

const MetricPlot::Series* MetricPlot::find_series(const QString& metric) const {
  for (const auto& s : series_)
    if (s.metric == metric) return &s;
  return nullptr;
}

MetricPlot::Series& MetricPlot::series(const QString& metric) {
  for (auto& s : series_)
    if (s.metric == metric) return s;
  Series s;
  s.metric = metric;
  s.graph = make_graph(metric, Qt::SolidLine, run_colour_);
  s.toggle = new QAction(metric, this);
  s.toggle->setCheckable(true);
  s.toggle->setChecked(only_metrics_ ? only_metrics_->contains(metric) : shown_by_default(metric));
  s.graph->setVisible(s.toggle->isChecked());
  connect(s.toggle, &QAction::toggled, this, [this, metric](bool on) {
    set_metric_visible(metric, on);
    Q_EMIT metric_visibility_changed(metric, on);
  });
  const auto pos = std::find_if(series_.begin(), series_.end(),
                                [&](const Series& other) { return sort_key(metric) < sort_key(other.metric); });
  QAction* before = pos == series_.end() ? nullptr : pos->toggle;
  metrics_menu_->insertAction(before, s.toggle);
  return *series_.insert(pos, s);
}

void MetricPlot::add_evaluation(double epoch, const std::vector<std::pair<std::string, double>>& metrics) {
  for (const auto& [name, value] : metrics) series(QString::fromStdString(name)).graph->addData(epoch, 100 * value);
  refresh();
}

void MetricPlot::set_evaluations(const std::vector<xmc::EvalPoint>& points) {
  for (auto& s : series_) s.graph->data()->clear();
  for (const auto& p : points) series(QString::fromStdString(p.metric)).graph->addData(p.epoch, 100 * p.value);
  refresh();
}

void MetricPlot::add_comparison_run(const QString& run_label, const std::vector<xmc::EvalPoint>& points) {
  static const Qt::PenStyle styles[] = {Qt::DashLine, Qt::DotLine, Qt::DashDotLine, Qt::DashDotDotLine};
  auto it = std::find_if(comparisons_.begin(), comparisons_.end(), [&](const Comparison& c) { return c.label == run_label; });
  if (it == comparisons_.end()) {
    Comparison c;
    c.label = run_label;
    c.style = styles[comparisons_.size() % std::size(styles)];
    c.legend_key = addGraph();
    c.legend_key->setPen(QPen(QColor(0x44, 0x44, 0x44), 1.8, c.style));
    c.legend_key->setName(run_label);
    comparisons_.push_back(c);
    it = comparisons_.end() - 1;
  }
  for (auto& [metric, graph] : it->graphs) graph->data()->clear();
  for (const auto& p : points) {
    const QString metric = QString::fromStdString(p.metric);
    const bool visible = series(metric).toggle->isChecked();  // creates the toggle for a metric new to this plot
    auto g = std::find_if(it->graphs.begin(), it->graphs.end(), [&](const auto& e) { return e.first == metric; });
    if (g == it->graphs.end()) {
      QCPGraph* graph = make_graph(metric, it->style, it->colour);
      graph->setName(metric + QStringLiteral(" — ") + run_label);
      graph->setVisible(visible);
      it->graphs.emplace_back(metric, graph);
      g = it->graphs.end() - 1;
    }
    g->second->addData(p.epoch, 100 * p.value);
  }
  refresh();
}

void MetricPlot::set_band(const QString& run_label, const std::vector<xmc::EvalPoint>& spread) {
  remove_bands(run_label);
  std::optional<QColor> colour = run_colour_;
  auto curve_of = [&](const QString& metric) -> QCPGraph* {
    if (run_label == run_label_) return metric_graph(metric);
    for (const auto& c : comparisons_)
      if (c.label == run_label) colour = c.colour;
    return comparison_graph(run_label, metric);
  };
  for (const auto& p : spread) {
    const QString metric = QString::fromStdString(p.metric);
    QCPGraph* curve = curve_of(metric);
    if (!curve || !std::isfinite(p.value)) continue;
    const auto at = curve->data()->findBegin(p.epoch, false);
    if (at == curve->data()->constEnd() || std::abs(at->key - p.epoch) > 1e-9) continue;
    auto band = std::find_if(bands_.begin(), bands_.end(), [&](const Band& b) { return b.run == run_label && b.metric == metric; });
    if (band == bands_.end()) {
      Band b{run_label, metric, addGraph(), addGraph()};
      const QColor fill = colour.value_or(curve->pen().color());
      for (QCPGraph* edge : {b.lower, b.upper}) {
        edge->setName(QString());
        edge->setVisible(curve->visible());
        edge->setLayer(QStringLiteral("grid"));  // under every curve
      }
      style::shade_between(b.lower, b.upper, fill);
      bands_.push_back(b);
      band = bands_.end() - 1;
    }
    band->lower->addData(p.epoch, at->value - 100 * p.value);
    band->upper->addData(p.epoch, at->value + 100 * p.value);
  }
  refresh();
}

std::pair<QCPGraph*, QCPGraph*> MetricPlot::band_graphs(const QString& run_label, const QString& metric) const {
  for (const Band& b : bands_)
    if (b.run == run_label && b.metric == metric) return {b.lower, b.upper};
  return {nullptr, nullptr};
}

void MetricPlot::remove_bands(const QString& run_label) {
  for (auto it = bands_.begin(); it != bands_.end();) {
    if (!run_label.isNull() && it->run != run_label) {
      ++it;
      continue;
    }
    removeGraph(it->upper);
    removeGraph(it->lower);
    it = bands_.erase(it);
  }
}

void MetricPlot::clear_comparisons() {
  remove_bands(QString());  // every band: the plotted run's too (its label may change with the next runs)
  for (auto& c : comparisons_) {
    for (auto& [metric, graph] : c.graphs) removeGraph(graph);
    removeGraph(c.legend_key);
  }
  comparisons_.clear();
  refresh();
}

void MetricPlot::clear() {
  for (auto& s : series_) s.graph->data()->clear();
  set_milestones({});
  clear_comparisons();
}

void MetricPlot::set_milestones(const std::vector<std::pair<double, QString>>& milestones) {
  for (QCPAbstractItem* item : milestone_items_) removeItem(item);
  milestone_items_.clear();
  milestone_list_ = milestones;
  // Marks at one epoch share a line, their labels stacked (a run that chose three settings at once).
  std::map<double, QString> by_epoch;
  for (const auto& [epoch, label] : milestones) {
    QString& text = by_epoch[epoch];
    if (!text.contains(label)) text += (text.isEmpty() ? QString() : QStringLiteral("\n")) + label;
  }
  const QColor grey(0x70, 0x70, 0x70);
  for (const auto& [epoch, label] : by_epoch) {
    auto* line = new QCPItemStraightLine(this);
    line->point1->setCoords(epoch, 0);
    line->point2->setCoords(epoch, 1);
    line->setPen(QPen(grey, 1, Qt::DashDotLine));
    line->setSelectable(false);
    auto* text = new QCPItemText(this);
    text->position->setTypeX(QCPItemPosition::ptPlotCoords);
    text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(epoch, 0.01);
    text->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    text->setPadding(QMargins(3, 0, 0, 0));
    text->setText(label);
    text->setColor(grey);
    QFont font = this->font();
    font.setPointSizeF(font.pointSizeF() * 0.85);
    text->setFont(font);
    text->setSelectable(false);
    text->setClipToAxisRect(true);
    milestone_items_.push_back(line);
    milestone_items_.push_back(text);
  }
  rescale();  // the marks are in view, even before the first evaluation after them
  replot(QCustomPlot::rpQueuedReplot);
}

void MetricPlot::set_run_label(const QString& label) {
  run_label_ = label.isEmpty() ? tr("this run") : label;
  refresh();
}

void MetricPlot::set_metric_visible(const QString& metric, bool visible) {
  Series& s = series(metric);
  if (s.toggle->isChecked() != visible) s.toggle->setChecked(visible);  // re-enters once through toggled()
  s.graph->setVisible(visible);
  for (auto& c : comparisons_)
    for (auto& [name, graph] : c.graphs)
      if (name == metric) graph->setVisible(visible);
  for (Band& b : bands_)
    if (b.metric == metric) b.lower->setVisible(visible), b.upper->setVisible(visible);
  refresh();
}

bool MetricPlot::metric_visible(const QString& metric) const {
  const Series* s = find_series(metric);
  if (s) return s->toggle->isChecked();
  return only_metrics_ ? only_metrics_->contains(metric) : shown_by_default(metric);
}

QStringList MetricPlot::metric_names() const {
  QStringList names;
  for (const auto& s : series_) names.append(s.metric);
  return names;
}

QCPGraph* MetricPlot::metric_graph(const QString& metric) const {
  const Series* s = find_series(metric);
  return s ? s->graph : nullptr;
}

QCPGraph* MetricPlot::comparison_graph(const QString& run_label, const QString& metric) const {
  for (const auto& c : comparisons_)
    if (c.label == run_label)
      for (const auto& [name, graph] : c.graphs)
        if (name == metric) return graph;
  return nullptr;
}

void MetricPlot::refresh() {
  update_legend();
  rescale();
  replot(QCustomPlot::rpQueuedReplot);
}

// Visible metrics that have data (named with the run's latest value), then — when runs are compared —
// one entry per line style.
void MetricPlot::update_legend() {
  legend->clearItems();
  for (auto& s : series_) {
    if (!s.toggle->isChecked()) continue;
    bool has_data = !s.graph->data()->isEmpty();
    for (const auto& c : comparisons_)
      for (const auto& [name, graph] : c.graphs)
        if (name == s.metric && !graph->data()->isEmpty()) has_data = true;
    if (!has_data) continue;
    QString name = s.metric;
    // A value names one run's: left out when runs are coloured apart (the table has every run's).
    // With modes or runs overlaid the value says whose it is (the solid curve's).
    if (!run_colour_ && !s.graph->data()->isEmpty() && width() >= kMinWidthForValues)
      name += QStringLiteral("  ") + percent_text((s.graph->data()->constEnd() - 1)->value) +
              (comparisons_.empty() ? QString() : QStringLiteral(" ") + run_label_);
    s.graph->setName(name);
    if (run_colour_) {
      // Runs have colours of their own: the metric's entry shows its line style and marker in grey, not the
      // colour of one run.
      QCPGraph*& key = metric_keys_[s.metric];
      if (!key) {
        key = addGraph();
        style_graph(key, s.metric, Qt::SolidLine, QColor(0x44, 0x44, 0x44));
      }
      key->setName(name);
      key->addToLegend(legend);
    } else {
      s.graph->addToLegend(legend);
    }
  }
  run_legend_->clearItems();
  if (!comparisons_.empty()) {
    run_legend_key_->setName(run_label_);
    run_legend_key_->addToLegend(run_legend_);
    for (auto& c : comparisons_) c.legend_key->addToLegend(run_legend_);
  }
  legend->setVisible(legend->itemCount() > 0);
  run_legend_->setVisible(run_legend_->itemCount() > 0);
}

void MetricPlot::rescale() {
  double x_lo = std::numeric_limits<double>::max(), x_hi = std::numeric_limits<double>::lowest();
  double y_lo = x_lo, y_hi = x_hi;
  for (int i = 0; i < graphCount(); ++i) {
    QCPGraph* g = graph(i);
    if (!g->visible() || g->data()->isEmpty()) continue;
    bool ok = false;
    const QCPRange keys = g->data()->keyRange(ok);
    const QCPRange values = g->data()->valueRange(ok);
    x_lo = std::min(x_lo, keys.lower);
    x_hi = std::max(x_hi, keys.upper);
    y_lo = std::min(y_lo, values.lower);
    y_hi = std::max(y_hi, values.upper);
  }
  if (x_lo > x_hi) {  // nothing to show
    xAxis->setRange(0, 10);
    yAxis->setRange(0, 100);
    return;
  }
  // The marks before the first evaluation (xrlinear's choice at epoch 0, its second stage at 1, evaluated at 2); those
  // still ahead do not squeeze the points made so far.
  for (const auto& [epoch, label] : milestone_list_) x_lo = std::min(x_lo, epoch);
  const double x_pad = std::max(0.3, 0.03 * (x_hi - x_lo));
  xAxis->setRange(x_lo - x_pad, x_hi + x_pad);
  // Zoom to the values (metrics of one run usually sit within a few points of each other), not below 0
  // and at least 5 points tall; the top keeps its pad above 100 too, so markers at 100 % are not cut.
  double pad = std::max(1.0, 0.08 * (y_hi - y_lo));
  double lo = std::max(0.0, y_lo - pad), hi = y_hi + pad;
  if (hi - lo < 5) {
    const double mid = (hi + lo) / 2;
    lo = std::max(0.0, mid - 2.5);
    hi = lo + 5;
  }
  yAxis->setRange(lo, hi);
}

void MetricPlot::show_tooltip(QMouseEvent* event) {
  const QPointF pos = event->position();
  double best = kHoverRadiusPx * kHoverRadiusPx;
  QString text;
  auto consider = [&](QCPGraph* g, const QString& metric, const QString& run) {
    if (!g->visible()) return;
    for (const auto& d : *g->data()) {
      const double dx = xAxis->coordToPixel(d.key) - pos.x(), dy = yAxis->coordToPixel(d.value) - pos.y();
      if (dx * dx + dy * dy >= best) continue;
      best = dx * dx + dy * dy;
      text = tr("%1 = %2 at epoch %3").arg(metric, percent_text(d.value), QString::number(d.key, 'g', 4));
      if (!run.isEmpty()) text += QStringLiteral(" (") + run + QLatin1Char(')');
    }
  };
  for (auto& s : series_) consider(s.graph, s.metric, comparisons_.empty() ? QString() : run_label_);
  for (auto& c : comparisons_)
    for (auto& [metric, graph] : c.graphs) consider(graph, metric, c.label);
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

}  // namespace xmc::gui
