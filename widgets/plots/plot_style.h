#pragma once
// The shared look of the workbench plots: white background, readable fonts (≥ 9 pt), the Okabe–Ito
// colour-blind-safe palette, quiet grids, and legends laid out in a row (or column) of their own so they
// never cover data and re-flow their columns to the plot's width.
#include <QColor>
#include <QFont>
#include <QString>

#include "widgets/plots/plot_export.h"  // QCustomPlot

namespace xmc::gui::plot_style {

// Okabe & Ito (2008), distinguishable with every common colour-vision deficiency.
inline const QColor kBlack{0x00, 0x00, 0x00};
inline const QColor kOrange{0xE6, 0x9F, 0x00};
inline const QColor kSkyBlue{0x56, 0xB4, 0xE9};
inline const QColor kGreen{0x00, 0x9E, 0x73};
inline const QColor kYellow{0xF0, 0xE4, 0x42};
inline const QColor kBlue{0x00, 0x72, 0xB2};
inline const QColor kVermillion{0xD5, 0x5E, 0x00};
inline const QColor kPurple{0xCC, 0x79, 0xA7};
inline const QColor kGrey{0x99, 0x99, 0x99};

/// The plot's font at `points` size.
QFont font(const QCustomPlot* plot, double points, bool bold = false);

/// White background, antialiasing, window title (used as the export file name), keep_ticks_readable().
void style_plot(QCustomPlot* plot, const QString& title);
/// A bold 12 pt title element (not yet in a layout).
QCPTextElement* make_title(QCustomPlot* plot, const QString& text);
/// A 9.5 pt grey subtitle element (not yet in a layout).
QCPTextElement* make_subtitle(QCustomPlot* plot);
/// 10 pt label, 9 pt tick labels, light grid.
void style_axis(QCPAxis* axis, const QString& label);

/// 9 pt, borderless, transparent legend whose items fill rows first (for a legend under the plot).
void style_legend(QCPLegend* legend);
/// Puts a one-row grid [spacer | element | spacer] into cell (row, 0) of the plot's top layout (with a
/// tiny stretch factor), keeping `element` at its natural size, centred; returns the grid. `element`
/// may be null (fill cell (0, 1) later).
QCPLayoutGrid* add_centred_row(QCustomPlot* plot, int row, QCPLayoutElement* element);
/// Sets the legend's column count to the most (≤ max_columns) that fit the plot's width.
void fit_legend_columns(const QCustomPlot* plot, QCPLegend* legend, int max_columns);
/// Calls fit_legend_columns() before every replot, so a legend under the plot wraps instead of
/// overflowing when the plot narrows.
void keep_legend_fitting(QCustomPlot* plot, QCPLegend* legend, int max_columns);

/// Shades the area between `lower` and `upper` in `colour`, translucent (a ± sd band): both edges without a pen and
/// not selectable.
void shade_between(QCPGraph* lower, QCPGraph* upper, const QColor& colour);

/// Before every replot, lowers the tick count of every axis (at most QCustomPlot's default of 5) so that
/// tick labels keep about 45 px (vertical axes) or 90 px (horizontal axes) each when the plot is small.
void keep_ticks_readable(QCustomPlot* plot);

/// Ticks on whole numbers only (steps 1, 2, 5, 10, 20, …): for epochs and optimiser steps, whose
/// labels are printed without decimals.
class IntegerTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override;
};

/// A grey note in the middle of the plot's main axis rect ("no training steps yet"), shown only while
/// no plottable has data, so an empty plot says why it is empty instead of looking broken.
QCPItemText* add_empty_note(QCustomPlot* plot, const QString& text);

}  // namespace xmc::gui::plot_style
