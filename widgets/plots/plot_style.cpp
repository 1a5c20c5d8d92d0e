#include "widgets/plots/plot_style.h"

#include <cmath>

#include <algorithm>
#include <memory>

namespace xmc::gui::plot_style {

QFont font(const QCustomPlot* plot, double points, bool bold) {
  QFont f = plot->font();
  f.setPointSizeF(points);
  f.setBold(bold);
  return f;
}

void style_plot(QCustomPlot* plot, const QString& title) {
  plot->setWindowTitle(title);
  plot->setBackground(Qt::white);
  plot->setAntialiasedElements(QCP::aeAll);
  plot->setNoAntialiasingOnDrag(true);
  keep_ticks_readable(plot);
}

QCPTextElement* make_title(QCustomPlot* plot, const QString& text) {
  auto* title = new QCPTextElement(plot, text, font(plot, 12, true));
  title->setMargins(QMargins(8, 6, 8, 0));
  return title;
}

QCPTextElement* make_subtitle(QCustomPlot* plot) {
  auto* subtitle = new QCPTextElement(plot, QString(), font(plot, 9.5));
  subtitle->setTextColor(QColor(0x44, 0x44, 0x44));
  subtitle->setMargins(QMargins(8, 2, 8, 0));
  return subtitle;
}

void style_axis(QCPAxis* axis, const QString& label) {
  const QCustomPlot* plot = axis->parentPlot();
  axis->setLabel(label);
  axis->setLabelFont(font(plot, 10));
  axis->setTickLabelFont(font(plot, 9));
  axis->setLabelColor(Qt::black);
  axis->setTickLabelColor(QColor(0x33, 0x33, 0x33));
  axis->grid()->setPen(QPen(QColor(0xE3, 0xE3, 0xE3), 0, Qt::SolidLine));
  axis->grid()->setZeroLinePen(Qt::NoPen);
}

void style_legend(QCPLegend* legend) {
  legend->setVisible(true);
  legend->setFont(font(legend->parentPlot(), 9));
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  legend->setFillOrder(QCPLegend::foColumnsFirst);
  legend->setColumnSpacing(18);
  legend->setRowSpacing(1);
  legend->setMargins(QMargins(6, 2, 6, 4));
}

QCPLayoutGrid* add_centred_row(QCustomPlot* plot, int row, QCPLayoutElement* element) {
  auto* grid = new QCPLayoutGrid;
  plot->plotLayout()->addElement(row, 0, grid);  // first, so that what goes into it knows the plot
  plot->plotLayout()->setRowStretchFactor(row, 0.001);
  grid->addElement(0, 0, new QCPLayoutElement(plot));
  if (element) grid->addElement(0, 1, element);
  grid->addElement(0, 2, new QCPLayoutElement(plot));
  grid->setColumnStretchFactor(1, 0.001);
  grid->setColumnSpacing(0);
  return grid;
}

void fit_legend_columns(const QCustomPlot* plot, QCPLegend* legend, int max_columns) {
  auto arrange = [legend](int columns) {
    if (legend->wrap() != columns || legend->fillOrder() != QCPLegend::foColumnsFirst) {
      legend->setWrap(columns);
      legend->setFillOrder(QCPLegend::foColumnsFirst, true);
    }
  };
  const int items = legend->itemCount();
  const int available = plot->width() - 16;
  int columns = std::max(1, std::min(max_columns, items));
  for (; columns > 1; --columns) {
    arrange(columns);
    if (legend->minimumOuterSizeHint().width() <= available) break;
  }
  // Balance the rows: 6 items in 4 columns read better as 3 + 3 than as 4 + 2.
  if (items > 0) {
    const int rows = (items + columns - 1) / columns;
    columns = (items + rows - 1) / rows;
  }
  arrange(columns);
}

void keep_legend_fitting(QCustomPlot* plot, QCPLegend* legend, int max_columns) {
  QObject::connect(plot, &QCustomPlot::beforeReplot, legend,
                   [plot, legend, max_columns] { fit_legend_columns(plot, legend, max_columns); });
}

void shade_between(QCPGraph* lower, QCPGraph* upper, const QColor& colour) {
  for (QCPGraph* edge : {lower, upper}) {
    edge->setPen(Qt::NoPen);
    edge->setSelectable(QCP::stNone);
  }
  QColor translucent = colour;
  translucent.setAlpha(45);
  upper->setBrush(translucent);
  upper->setChannelFillGraph(lower);
}

void keep_ticks_readable(QCustomPlot* plot) {
  // Axis rects keep the size of the last layout until the next one, which comes after this handler:
  // scale them by how much the viewport changed since then.
  auto last_viewport = std::make_shared<QSize>();
  QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot, last_viewport] {
    const QSize now = plot->viewport().size();
    const double sx = last_viewport->width() > 0 ? static_cast<double>(now.width()) / last_viewport->width() : 1;
    const double sy = last_viewport->height() > 0 ? static_cast<double>(now.height()) / last_viewport->height() : 1;
    *last_viewport = now;
    for (QCPAxisRect* rect : plot->axisRects()) {
      if (rect->width() <= 0 || rect->height() <= 0) continue;
      const double w = rect->width() * sx, h = rect->height() * sy;
      for (QCPAxis* axis : rect->axes()) {
        const bool vertical = axis->orientation() == Qt::Vertical;
        const int count = std::clamp(static_cast<int>(vertical ? h / 45 : w / 90), 2, 5);
        if (axis->ticker()->tickCount() != count) axis->ticker()->setTickCount(count);
      }
    }
  });
}

QCPItemText* add_empty_note(QCustomPlot* plot, const QString& text) {
  auto* note = new QCPItemText(plot);
  note->setClipToAxisRect(false);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setAxisRect(plot->axisRect());
  note->position->setCoords(0.5, 0.5);
  note->setPositionAlignment(Qt::AlignCenter);
  note->setTextAlignment(Qt::AlignCenter);
  note->setFont(font(plot, 10));
  note->setColor(QColor(0x77, 0x77, 0x77));
  note->setText(text);
  note->setSelectable(false);
  QObject::connect(plot, &QCustomPlot::beforeReplot, note, [plot, note] {
    bool empty = true;
    for (int i = 0; i < plot->plottableCount() && empty; ++i) {
      QCPAbstractPlottable* p = plot->plottable(i);
      if (p->visible() && p->interface1D() && p->interface1D()->dataCount() > 0) empty = false;
    }
    note->setVisible(empty);
  });
  return note;
}

double IntegerTicker::getTickStep(const QCPRange& range) {
  const double raw = QCPAxisTicker::getTickStep(range);
  if (raw <= 1) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / magnitude;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * magnitude;
}

}  // namespace xmc::gui::plot_style
