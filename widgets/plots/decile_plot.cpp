#include "widgets/plots/decile_plot.h"

#include <QRegularExpression>

#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "widgets/plots/plot_style.h"

namespace xmc::gui {
namespace {

namespace style = plot_style;

constexpr int kBins = 10;
constexpr double kSingleWidth = 0.7;  // bar width in bins when one run is shown
constexpr double kGroupWidth = 0.84;  // width of a bin's group of bars when several runs are
constexpr double kSpacing = 0.04;     // gap between the bars of one bin
// The first run is blue; the others take the next colours of the colour-blind-safe palette.
const QColor kOverlayColours[] = {plot_style::kOrange, plot_style::kGreen, plot_style::kPurple};

// Percent value as written above a bar (the axis carries the unit).
QString bar_text(double percent) { return QString::number(percent, 'f', std::abs(percent) < 1 ? 2 : 1); }

// The ten bars in percent (the axis unit), bin 1 first.
void fill_bars(QCPBars* series, const QString& run_label, const std::array<double, 10>& bars) {
  QVector<double> keys, values;
  for (int bin = 0; bin < kBins; ++bin) {
    keys.append(bin + 1);
    values.append(100 * bars[static_cast<std::size_t>(bin)]);
  }
  series->setName(run_label);
  series->setData(keys, values, true);
}

void style_bars(QCPBars* bars, const QColor& colour) {
  bars->setPen(QPen(colour.darker(125), 1));
  bars->setBrush(colour);
  bars->setWidthType(QCPBars::wtPlotCoords);
}

}  // namespace

DecilePlot::DecilePlot(QWidget* parent) : QCustomPlot(parent) {
  style::style_plot(this, QString());
  QCPAxisRect* rect = axisRect();
  title_ = style::make_title(this, QString());
  subtitle_ = style::make_subtitle(this);
  plotLayout()->insertRow(0);
  plotLayout()->addElement(0, 0, title_);
  plotLayout()->insertRow(1);
  plotLayout()->addElement(1, 0, subtitle_);
  plotLayout()->setRowStretchFactor(0, 0.001);
  plotLayout()->setRowStretchFactor(1, 0.001);
  plotLayout()->setRowSpacing(0);

  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int bin = 1; bin <= kBins; ++bin) {
    QString text = QString::number(bin);
    if (bin == 1) text += tr("\nhead");
    if (bin == kBins) text += tr("\ntail");
    ticker->addTick(bin, text);
  }
  xAxis->setTicker(ticker);
  xAxis->setRange(0.4, kBins + 0.6);
  xAxis->setTickLength(0, 4);
  xAxis->setSubTicks(false);
  yAxis->setRange(0, 1);

  group_ = new QCPBarsGroup(this);
  group_->setSpacingType(QCPBarsGroup::stPlotCoords);
  group_->setSpacing(kSpacing);
  bars_ = new QCPBars(xAxis, yAxis);
  style_bars(bars_, style::kBlue);
  bars_->setWidth(kSingleWidth);
  bars_->setBarsGroup(group_);

  rect->insetLayout()->take(legend);
  style::style_legend(legend);
  style::add_centred_row(this, 3, legend);
  style::keep_legend_fitting(this, legend, 4);
  bars_->removeFromLegend();

  // Subtitle lines and value labels depend on the width: settle them before every replot.
  connect(this, &QCustomPlot::beforeReplot, this, [this] {
    update_texts();
    update_labels();
  });
  set_metric(metric_);  // title, axis labels, refresh
  xAxis->grid()->setVisible(false);
  add_export_menu(this, this);
  setMouseTracking(true);
  connect(this, &QCustomPlot::mouseMove, this, &DecilePlot::show_tooltip);
}

QSize DecilePlot::minimumSizeHint() const { return {420, 300}; }
QSize DecilePlot::sizeHint() const { return {720, 440}; }

void DecilePlot::set_metric(const QString& metric) {
  metric_ = metric.isEmpty() ? QStringLiteral("P@5") : metric;
  setWindowTitle(tr("Decile-wise %1").arg(metric_));
  title_->setText(tr("Decile-wise %1 (bin 1 = head labels)").arg(metric_));
  style::style_axis(xAxis, tr("label decile (by train frequency)"));
  style::style_axis(yAxis, tr("contribution to %1 (%)").arg(metric_));
  refresh();
}

void DecilePlot::set_bars(const QString& run_label, const std::array<double, 10>& bars) {
  fill_bars(bars_, run_label, bars);
  bars_->addToLegend(legend);
  refresh();
}

void DecilePlot::set_overlay(const QString& run_label, const std::array<double, 10>& bars) {
  clear_overlay();
  add_overlay(run_label, bars);
}

bool DecilePlot::add_overlay(const QString& run_label, const std::array<double, 10>& bars) {
  if (static_cast<int>(overlays_.size()) + 1 >= kMaxRuns) return false;
  auto* series = new QCPBars(xAxis, yAxis);
  style_bars(series, kOverlayColours[overlays_.size() % std::size(kOverlayColours)]);
  series->setBarsGroup(group_);
  fill_bars(series, run_label, bars);
  series->addToLegend(legend);  // after the runs already shown
  overlays_.push_back(series);
  refresh();
  return true;
}

void DecilePlot::clear_overlay() {
  if (overlays_.empty()) return;
  for (QCPBars* b : overlays_) removePlottable(b);  // also leaves the group and the legend
  overlays_.clear();
  refresh();
}

void DecilePlot::clear_bars() {
  bars_->data()->clear();
  bars_->removeFromLegend();
  refresh();
}

void DecilePlot::clear() {
  clear_overlay();
  clear_bars();
}

std::optional<std::array<double, 10>> DecilePlot::bars_of(const std::vector<double>& table) {
  if (table.size() != kBins) return std::nullopt;
  std::array<double, 10> bars{};
  std::copy(table.begin(), table.end(), bars.begin());
  return bars;
}

void DecilePlot::set_run_colour(std::size_t run, const QColor& colour) {
  const std::vector<QCPBars*> series = all_bars();
  if (run >= series.size()) return;
  style_bars(series[run], colour);
  replot(QCustomPlot::rpQueuedReplot);
}

std::vector<QCPBars*> DecilePlot::all_bars() const {
  std::vector<QCPBars*> out{bars_};
  out.insert(out.end(), overlays_.begin(), overlays_.end());
  return out;
}

double DecilePlot::bar_width() const {
  const auto runs = static_cast<double>(1 + overlays_.size());
  return runs == 1 ? kSingleWidth : (kGroupWidth - (runs - 1) * kSpacing) / runs;
}

double DecilePlot::offset_of(std::size_t run) const {
  const auto runs = static_cast<double>(1 + overlays_.size());
  return (static_cast<double>(run) - (runs - 1) / 2) * (bar_width() + kSpacing);
}

void DecilePlot::refresh() {
  for (QCPBars* b : all_bars()) b->setWidth(bar_width());
  double top = 0;
  for (QCPBars* b : all_bars()) {
    if (b->data()->isEmpty()) continue;
    bool ok = false;
    top = std::max(top, b->data()->valueRange(ok).upper);
  }
  yAxis->setRange(0, top > 0 ? top * 1.18 : 1);  // headroom for the value labels
  update_texts();
  update_labels();
  legend->setVisible(legend->itemCount() > 0);
  replot(QCustomPlot::rpQueuedReplot);
}

namespace {

/// `pieces` joined by "  ·  " into as few lines as fit `room`, the first starting with `lead`.
QStringList packed_lines(const QString& lead, const QStringList& pieces, const QFontMetrics& metrics, int room) {
  QStringList out;
  QString line = lead;
  bool empty = true;
  for (const QString& piece : pieces) {
    const QString longer = empty ? line + piece : line + QStringLiteral("  ·  ") + piece;
    if (!empty && metrics.horizontalAdvance(longer) > room) {
      out.append(line);
      line = piece;
    } else {
      line = longer;
    }
    empty = false;
  }
  out.append(line);
  return out;
}

}  // namespace

// "bars add up to P@5 — DEXML: 23.9 %  ·  NGAME: 22.0 %"; when that is too wide, runs by their ids packed on few
// lines; else one run per line.
void DecilePlot::update_texts() {
  QStringList sums, lines, short_lines, id_sums;
  static const QRegularExpression run_id(QStringLiteral("\\(#(\\d+)\\)$"));
  for (QCPBars* b : all_bars()) {
    if (b->data()->isEmpty()) continue;
    double sum = 0;
    for (const auto& d : *b->data()) sum += d.value;
    const QString value = QString::number(sum, 'f', 2) + QStringLiteral(" %");
    sums.append(b->name().isEmpty() ? value : b->name() + QStringLiteral(": ") + value);
    lines.append(b->name().isEmpty() ? tr("%1 = %2").arg(metric_, value) : tr("%1 of %2: %3").arg(metric_, b->name(), value));
    // A run named "… (#11)" that does not fit is named by its id (the legend beside names it whole), never cut.
    const QRegularExpressionMatch id = run_id.match(b->name());
    short_lines.append(id.hasMatch() ? tr("%1 of #%2: %3").arg(metric_, id.captured(1), value) : lines.back());
    id_sums.append(id.hasMatch() ? tr("#%1: %2").arg(id.captured(1), value) : sums.back());
  }
  if (sums.isEmpty()) {
    subtitle_->setText(tr("no evaluation yet"));
    return;
  }
  const QFontMetrics metrics(subtitle_->font());
  const int room = std::max(100, width() - 24);
  const QString joined = sums.join(QStringLiteral("  ·  "));
  const QString one_line = tr("the ten bars add up to %1 — %2").arg(metric_, joined);
  const QString short_line = tr("%1 — %2").arg(metric_, joined);
  if (metrics.horizontalAdvance(one_line) <= room) {
    subtitle_->setText(one_line);
  } else if (metrics.horizontalAdvance(short_line) <= room) {
    subtitle_->setText(short_line);
  } else if (const QStringList packed = packed_lines(metric_ + QStringLiteral(" — "), id_sums, metrics, room); packed.size() < lines.size()) {
    // Runs by their ids, as many to a line as fit (a figure at a column's width keeps its bars' height).
    subtitle_->setText(packed.join(QLatin1Char('\n')));
  } else {  // one run per line
    for (qsizetype i = 0; i < lines.size(); ++i) {
      if (metrics.horizontalAdvance(lines[i]) > room) lines[i] = short_lines[i];
      lines[i] = metrics.elidedText(lines[i], Qt::ElideMiddle, room);
    }
    subtitle_->setText(lines.join(QLatin1Char('\n')));
  }
}

// One text item above every bar; all hidden when they would not fit the bar width at this size.
void DecilePlot::update_labels() {
  const std::vector<QCPBars*> series = all_bars();
  const QFont label_font = style::font(this, 9);
  const QFontMetrics metrics(label_font);
  // Axis-rect width at the widget's current size: the width less the axis margins of the last layout
  // (about 80 px before the first one).
  const QMargins m = axisRect()->margins();
  const int margin_px = m.left() + m.right() > 0 ? m.left() + m.right() : 80;
  const double axis_px = std::max(1, width() - margin_px);
  const double bin_px = axis_px / (kBins + 0.2);
  const double room_px = (series.size() > 1 ? bar_width() + kSpacing : 0.95) * bin_px;

  bool fits = true;
  for (QCPBars* b : series)
    for (const auto& d : *b->data()) fits = fits && metrics.horizontalAdvance(bar_text(d.value)) + 2 <= room_px;

  while (labels_.size() > series.size()) {
    for (QCPItemText* t : labels_.back()) removeItem(t);
    labels_.pop_back();
  }
  labels_.resize(series.size());
  for (std::size_t s = 0; s < series.size(); ++s) {
    QCPBars* b = series[s];
    std::vector<QCPItemText*>& labels = labels_[s];
    const int n = static_cast<int>(b->data()->size());
    while (static_cast<int>(labels.size()) > n) {
      removeItem(labels.back());
      labels.pop_back();
    }
    while (static_cast<int>(labels.size()) < n) {
      auto* t = new QCPItemText(this);
      t->setFont(label_font);
      t->setColor(QColor(0x22, 0x22, 0x22));
      t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
      t->setPadding(QMargins(0, 0, 0, 2));
      t->setSelectable(false);
      labels.push_back(t);
    }
    for (int i = 0; i < n; ++i) {
      const auto& d = *(b->data()->constBegin() + i);
      labels[static_cast<std::size_t>(i)]->position->setCoords(d.key + offset_of(s), std::max(0.0, d.value));
      labels[static_cast<std::size_t>(i)]->setText(bar_text(d.value));
      labels[static_cast<std::size_t>(i)]->setVisible(fits);
    }
  }
}

void DecilePlot::show_tooltip(QMouseEvent* event) {
  const QPointF pos = event->position();
  if (!axisRect()->rect().contains(pos.toPoint())) {
    QToolTip::hideText();
    return;
  }
  const double key = xAxis->pixelToCoord(pos.x());
  const int bin = static_cast<int>(std::lround(key));
  const std::vector<QCPBars*> series = all_bars();
  QString text;
  for (std::size_t s = 0; s < series.size(); ++s) {
    QCPBars* b = series[s];
    if (bin < 1 || bin > kBins || std::abs(key - (bin + offset_of(s))) > bar_width() / 2) continue;
    auto it = b->data()->findBegin(bin, false);
    if (it == b->data()->constEnd() || it->key != bin) continue;
    text = tr("bin %1 of %2 (1 = head): %3 % of %4").arg(bin).arg(kBins).arg(bar_text(it->value), metric_);
    if (!b->name().isEmpty()) text += QStringLiteral(" — ") + b->name();
  }
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

}  // namespace xmc::gui
