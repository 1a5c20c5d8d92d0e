#pragma once
// Exporting a QCustomPlot for papers and reports: PNG (2× pixel density), SVG and PDF, chosen by the file
// extension, plus the right-click "Export as …" menu every plot of the workbench carries.
//
// Also the one way to include QCustomPlot in this project: its header uses the `signals` and `foreach`
// keywords that QT_NO_KEYWORDS (set for every widget target) takes away, so they are mapped to
// Q_SIGNALS / Q_FOREACH around the include. Include "widgets/plots/plot_export.h", never <qcustomplot.h>.
#include <QObject>
#include <QSizeF>
#include <QString>
#include <vector>

class QAbstractItemModel;

#if defined(QT_NO_KEYWORDS) && !defined(signals)
#define signals Q_SIGNALS
#define XMC_QCP_UNDEF_SIGNALS
#endif
#if defined(QT_NO_KEYWORDS) && !defined(foreach)
#define foreach Q_FOREACH
#define XMC_QCP_UNDEF_FOREACH
#endif
#include <qcustomplot.h>
#ifdef XMC_QCP_UNDEF_SIGNALS
#undef signals
#undef XMC_QCP_UNDEF_SIGNALS
#endif
#ifdef XMC_QCP_UNDEF_FOREACH
#undef foreach
#undef XMC_QCP_UNDEF_FOREACH
#endif

namespace xmc::gui {

/// Writes `plot` to `path` in the format its extension names (case-insensitive):
///   .png  raster at 2× the given size (crisp on high-DPI screens and in slides),
///   .svg  vector graphics (text stays text),
///   .pdf  vector graphics.
/// width/height: size of the exported plot in pixels / points; 0 = the plot's current on-screen size
/// (900 × 500 when the plot was never laid out). Returns false and, when `error` is given, sets a one-line
/// message naming the file and what would fix it (unknown extension, unwritable folder, ...).
bool export_plot(QCustomPlot* plot, const QString& path, int width = 0, int height = 0, QString* error = nullptr);

/// Writes a whole view (all its plots and tables, as on screen) to `path` as .png (2×), .svg or .pdf (one
/// page of the view's size): a multi-run comparison as one figure. Errors as export_plot's.
bool export_figure(QWidget* view, const QString& path, QString* error = nullptr);

/// One panel of a figure laid out for a paper: a plot, drawn afresh at the panel's size, or a table (a model's
/// header and cells, bold where the model's font says so), which takes a whole row.
struct FigurePanel {
  QCustomPlot* plot = nullptr;
  const QAbstractItemModel* table = nullptr;
};

/// A figure's physical layout: its width (3.3 in one column of a two-column paper, 7 in both columns, 10 in
/// a slide), plots in `columns` columns at `aspect` = height / width, and the type size of tick labels in
/// points (titles, axis labels and legends keep their proportions to it).
struct FigureOptions {
  double width_inches = 7.0;
  int columns = 2;
  double aspect = 0.75;
  double font_points = 8;
  int png_dpi = 300;
};

/// The figure's size in inches for `panels` laid out by `options`.
QSizeF figure_size_inches(const std::vector<FigurePanel>& panels, const FigureOptions& options);

/// Lays `panels` out afresh (tables first, full width; then the plots row by row) at the physical size
/// `options` give, and writes them to `path` as .png (png_dpi), .svg or .pdf (one page of the figure's
/// size). Nothing of the screen (scroll bars, buttons, splitters) comes along. Errors as export_plot's.
bool export_panels(const std::vector<FigurePanel>& panels, const FigureOptions& options, const QString& path, QString* error = nullptr);

/// Gives `plot` a right-click menu: the plot's own QWidget::actions() first (e.g. checkable "show …"
/// toggles), then "Export as PNG…", "Export as SVG…", "Export as PDF…", each asking for a file name with a
/// QFileDialog parented to `owner` (nullptr = the plot) and exporting at the plot's on-screen size. The
/// suggested file name comes from the plot's windowTitle(). Failures are reported in a message box.
void add_export_menu(QCustomPlot* plot, QWidget* owner);

}  // namespace xmc::gui
