#include "widgets/plots/plot_export.h"

#include <QAbstractItemModel>
#include <QFontMetricsF>

#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QPainter>
#include <QPdfWriter>
#include <QPageSize>
#include <QImage>
#include <QLayout>
#include <QSvgGenerator>

#include "widgets/file_dialogs.h"

namespace xmc::gui {
namespace {

constexpr int kFallbackWidth = 900;
constexpr int kFallbackHeight = 500;

// The size to export at: the requested one, else the on-screen one, else a paper-friendly default
// (a plot that was never shown is 100 × 30 or 640 × 480 depending on whether it has a parent).
QSize export_size(const QCustomPlot* plot, int width, int height) {
  const bool sized = plot->width() >= 100 && plot->height() >= 80;
  const int w = width > 0 ? width : (sized ? plot->width() : kFallbackWidth);
  const int h = height > 0 ? height : (sized ? plot->height() : kFallbackHeight);
  return {w, h};
}

bool fail(QString* error, const QString& message) {
  if (error) *error = message;
  return false;
}

/// The lower-case extension of `path` when it names a format we write (png, svg, pdf) in an existing
/// folder; otherwise "" and `error` says which (`what`: "plot", "the figure").
QString export_extension(const QString& path, const QString& what, QString* error) {
  const QFileInfo info(path);
  const QString ext = info.suffix().toLower();
  if (ext != QLatin1String("png") && ext != QLatin1String("svg") && ext != QLatin1String("pdf")) {
    fail(error, QObject::tr("cannot export %1 to '%2': unknown format '%3'; use a .png, .svg or .pdf file name")
                    .arg(what, path, ext.isEmpty() ? QObject::tr("(no extension)") : QLatin1Char('.') + ext));
    return {};
  }
  if (!info.absoluteDir().exists()) {
    fail(error, QObject::tr("cannot export %1 to '%2': folder '%3' does not exist").arg(what, path, info.absolutePath()));
    return {};
  }
  return ext;
}

/// `ok` and a non-empty file at `path`; otherwise false with the reason in `error`.
bool check_written(bool ok, const QString& ext, const QString& path, QString* error) {
  if (ok && QFileInfo(path).size() > 0) return true;
  return fail(error, QObject::tr("cannot write %1 file '%2': check that the folder is writable and the disk not full")
                         .arg(ext.toUpper(), path));
}

/// An SVG of `size` pixels at `dpi` (text in points comes out as large as on screen).
void set_up_svg(QSvgGenerator& generator, const QString& path, QSize size, int dpi, const QString& title) {
  generator.setFileName(path);
  generator.setSize(size);
  generator.setViewBox(QRect(QPoint(0, 0), size));
  generator.setResolution(dpi);
  generator.setTitle(title);
  generator.setDescription(QStringLiteral("Exported by XMC Workbench"));
}

bool save_svg(QCustomPlot* plot, const QString& path, QSize size) {
  QSvgGenerator generator;
  set_up_svg(generator, path, size, plot->logicalDpiX(), plot->windowTitle().isEmpty() ? QStringLiteral("plot") : plot->windowTitle());
  QCPPainter painter;
  if (!painter.begin(&generator)) return false;
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  plot->toPainter(&painter, size.width(), size.height());
  return painter.end();
}

// "Training loss" -> "training-loss".
QString file_stem(const QCustomPlot* plot) {
  QString stem = plot->windowTitle().toLower();
  stem.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
  stem.remove(QRegularExpression(QStringLiteral("^-+|-+$")));
  return stem.isEmpty() ? QStringLiteral("plot") : stem;
}

QString& last_export_dir() {
  static QString dir;
  return dir;
}

void export_with_dialog(QCustomPlot* plot, QWidget* parent, const QString& format, const QString& filter) {
  const QString ext = format.toLower();
  QString dir = last_export_dir();
  if (dir.isEmpty()) dir = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
  if (dir.isEmpty()) dir = QDir::homePath();
  QString path = xmc::gui::save_file_name(parent, QObject::tr("Export plot as %1").arg(format),
                                              QDir(dir).filePath(file_stem(plot) + QLatin1Char('.') + ext), filter);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + ext;
  last_export_dir() = QFileInfo(path).absolutePath();
  QString error;
  if (!export_plot(plot, path, 0, 0, &error))
    QMessageBox::warning(parent, QObject::tr("Export failed"), error);
}

}  // namespace

bool export_figure(QWidget* view, const QString& path, QString* error) {
  if (!view) return fail(error, QObject::tr("cannot export '%1': no view given").arg(path));
  const QString ext = export_extension(path, QObject::tr("the figure"), error);
  if (ext.isEmpty()) return false;
  // A view never shown is laid out first (render() would do it, changing its size mid-export).
  view->ensurePolished();
  if (!view->testAttribute(Qt::WA_Resized) && !view->isVisible()) view->adjustSize();
  if (view->layout()) view->layout()->activate();
  for (QCustomPlot* plot : view->findChildren<QCustomPlot*>()) plot->replot(QCustomPlot::rpImmediateRefresh);
  const QSize size = view->size();
  bool ok = false;
  if (ext == QLatin1String("png")) {
    QImage image(size * 2, QImage::Format_ARGB32);
    image.setDevicePixelRatio(2.0);
    image.fill(Qt::white);
    QPainter painter(&image);
    view->render(&painter);
    painter.end();
    ok = image.save(path, "PNG");
  } else if (ext == QLatin1String("svg")) {
    QSvgGenerator generator;
    set_up_svg(generator, path, size, view->logicalDpiX(), view->windowTitle().isEmpty() ? QStringLiteral("figure") : view->windowTitle());
    QPainter painter;
    ok = painter.begin(&generator);
    if (ok) {
      view->render(&painter);
      ok = painter.end();
    }
  } else {
    QPdfWriter writer(path);
    writer.setCreator(QStringLiteral("XMC Workbench"));
    writer.setResolution(view->logicalDpiX());
    writer.setPageSize(QPageSize(QSizeF(size), QPageSize::Unit(QPageSize::Point)));  // one page of the view's size
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    QPainter painter;
    ok = painter.begin(&writer);
    if (ok) {
      const double scale = static_cast<double>(writer.width()) / std::max(1, size.width());
      painter.scale(scale, scale);
      view->render(&painter);
      ok = painter.end();
    }
  }
  return check_written(ok, ext, path, error);
}

bool export_plot(QCustomPlot* plot, const QString& path, int width, int height, QString* error) {
  if (!plot) return fail(error, QObject::tr("cannot export '%1': no plot given").arg(path));
  const QString ext = export_extension(path, QObject::tr("plot"), error);
  if (ext.isEmpty()) return false;

  const QSize size = export_size(plot, width, height);
  // Settle what depends on the data (empty-plot notes, value labels) before saving: the save functions
  // draw the layers as they are, without a replot.
  plot->replot(QCustomPlot::rpImmediateRefresh);
  bool ok = false;
  if (ext == QLatin1String("png")) {
    ok = plot->savePng(path, size.width(), size.height(), 2.0);
  } else if (ext == QLatin1String("pdf")) {
    ok = plot->savePdf(path, size.width(), size.height(), QCP::epAllowCosmetic, QStringLiteral("XMC Workbench"),
                       plot->windowTitle());
  } else {
    ok = save_svg(plot, path, size);
  }
  return check_written(ok, ext, path, error);
}

void add_export_menu(QCustomPlot* plot, QWidget* owner) {
  if (!plot) return;
  plot->setContextMenuPolicy(Qt::CustomContextMenu);
  QPointer<QWidget> parent_widget = owner ? owner : plot;
  QObject::connect(plot, &QWidget::customContextMenuRequested, plot, [plot, parent_widget](const QPoint& pos) {
    QMenu menu(plot);
    const auto own_actions = plot->actions();
    for (QAction* action : own_actions) menu.addAction(action);
    if (!own_actions.isEmpty()) menu.addSeparator();
    QWidget* parent = parent_widget ? parent_widget.data() : plot;
    const struct {
      const char* format;
      const char* filter;
    } formats[] = {{"PNG", "PNG image (*.png)"}, {"SVG", "SVG vector image (*.svg)"}, {"PDF", "PDF document (*.pdf)"}};
    for (const auto& f : formats) {
      const QString format = QString::fromLatin1(f.format);
      const QString filter = QObject::tr(f.filter);
      QObject::connect(menu.addAction(QObject::tr("Export as %1…").arg(format)), &QAction::triggered, plot,
                       [plot, parent, format, filter] { export_with_dialog(plot, parent, format, filter); });
    }
    menu.exec(plot->mapToGlobal(pos));
  });
}

namespace {

// The figure is drawn in "layout pixels" of 1/96 in at the plots' own type sizes (tick labels at 9 pt), then
// scaled to the physical size: the scale turns 9 pt into options.font_points.
constexpr double kLayoutDpi = 96;
constexpr double kPlotTickPoints = 9;
constexpr double kGapPx = 10;

double layout_scale(const FigureOptions& options) { return kPlotTickPoints / std::clamp(options.font_points, 4.0, 24.0); }

double table_row_height() { return kPlotTickPoints / 72.0 * kLayoutDpi * 1.7; }

/// How a table is set in `width` layout pixels: the type at `scale` of the tick size (down to 0.6 before anything is
/// cut short), a header cell broken after its commas onto lines when it does not fit on one ("lr=0.01," "seed=2 (#11)"),
/// and each column's width. Text is elided only when even that does not fit.
struct TableSetting {
  double scale = 1;
  std::vector<QStringList> header;  ///< per column (0: the row names' column, no header): its lines
  std::vector<double> widths;
  int header_lines = 1;
};

QString table_text(const QAbstractItemModel& model, int r, int c) {  // r = -1: the header row; c = 0: the row names
  if (c == 0) return r < 0 ? QString() : model.headerData(r, Qt::Vertical).toString();
  return r < 0 ? model.headerData(c - 1, Qt::Horizontal).toString() : model.index(r, c - 1).data().toString();
}

QFont table_font(double scale, bool bold) {
  QFont font(QStringLiteral("DejaVu Sans"));
  font.setPointSizeF(kPlotTickPoints * scale);
  font.setBold(bold);
  return font;
}

/// "lr=0.01, seed=2, epochs=2 (#11)" as lines broken after each ", ", joined again where they fit `room`.
QStringList broken_header(const QString& text, const QFontMetricsF& metrics, double room) {
  QStringList pieces;
  qsizetype from = 0;
  for (qsizetype at = text.indexOf(QStringLiteral(", ")); at >= 0; at = text.indexOf(QStringLiteral(", "), from)) {
    pieces << text.mid(from, at + 1 - from);
    from = at + 2;
  }
  pieces << text.mid(from);
  QStringList lines;
  for (const QString& piece : pieces)
    if (!lines.isEmpty() && metrics.horizontalAdvance(lines.back() + QLatin1Char(' ') + piece) <= room) lines.back() += QLatin1Char(' ') + piece;
    else lines << piece;
  return lines;
}

TableSetting set_table(const QAbstractItemModel& model, double width, QPaintDevice* device) {
  const int rows = model.rowCount(), columns = model.columnCount() + 1;
  TableSetting setting;
  for (const double scale : {1.0, 0.9, 0.8, 0.7, 0.6}) {
    const QFontMetricsF metrics(table_font(scale, true), device);
    const double padding = 16 * scale;
    for (const bool break_headers : {false, true}) {
      setting = TableSetting{.scale = scale, .header = {}, .widths = std::vector<double>(static_cast<std::size_t>(columns), 0), .header_lines = 1};
      double total = 0;
      for (int c = 0; c < columns; ++c) {
        double& w = setting.widths[static_cast<std::size_t>(c)];
        for (int r = 0; r < rows; ++r) w = std::max(w, metrics.horizontalAdvance(table_text(model, r, c)) + padding);
        const QString head = table_text(model, -1, c);
        // Broken, a header takes no more room than its column's cells, or its longest piece.
        QStringList lines = break_headers ? broken_header(head, metrics, w - padding) : QStringList{head};
        for (const QString& line : lines) w = std::max(w, metrics.horizontalAdvance(line) + padding);
        setting.header_lines = std::max(setting.header_lines, static_cast<int>(lines.size()));
        setting.header.push_back(std::move(lines));
        total += w;
      }
      // A narrow table is not spread across the page; one that does not fit even at the smallest type is cut short.
      const double stretch = total > 0 ? std::min(width / total, 1.3) : 1.0;
      if (stretch >= 1.0 || (scale == 0.6 && break_headers)) {
        for (double& w : setting.widths) w *= stretch;
        return setting;
      }
    }
  }
  return setting;
}

/// A device measuring as the layout does: 96 dots an inch.
QPaintDevice* layout_device() {
  static QImage device = [] {
    QImage image(1, 1, QImage::Format_RGB32);
    image.setDotsPerMeterX(static_cast<int>(kLayoutDpi / 0.0254));
    image.setDotsPerMeterY(static_cast<int>(kLayoutDpi / 0.0254));
    return image;
  }();
  return &device;
}

struct PanelRect {
  const FigurePanel* panel;
  QRectF rect;  // layout pixels
};

/// Where each panel goes, in layout pixels, and the figure's layout size.
std::vector<PanelRect> lay_out(const std::vector<FigurePanel>& panels, const FigureOptions& options, QSizeF* size) {
  const double width = options.width_inches * kLayoutDpi * layout_scale(options);
  const int columns = std::max(1, options.columns);
  const double panel_width = (width - kGapPx * (columns - 1)) / columns;
  const double panel_height = panel_width * std::clamp(options.aspect, 0.2, 2.0);
  std::vector<PanelRect> out;
  double y = 0;
  for (const FigurePanel& p : panels)
    if (p.table && !p.plot) {
      const double h = (p.table->rowCount() + set_table(*p.table, width, layout_device()).header_lines) * table_row_height();
      out.push_back({&p, QRectF(0, y, width, h)});
      y += h + kGapPx;
    }
  int column = 0;
  for (const FigurePanel& p : panels) {
    if (!p.plot) continue;
    out.push_back({&p, QRectF(column * (panel_width + kGapPx), y, panel_width, panel_height)});
    if (++column == columns) {
      column = 0;
      y += panel_height + kGapPx;
    }
  }
  if (column != 0) y += panel_height + kGapPx;
  *size = QSizeF(width, std::max(1.0, y - kGapPx));
  return out;
}

/// A table as a paper shows it: header in bold over a rule, cells right-aligned except the first column,
/// bold where the model's FontRole is bold (the best value of a row); set by set_table() to fit `rect`.
void draw_table(QPainter& painter, const QAbstractItemModel& model, const QRectF& rect) {
  const TableSetting setting = set_table(model, rect.width(), layout_device());
  const QFont font = table_font(setting.scale, false), bold = table_font(setting.scale, true);
  const int rows = model.rowCount(), columns = model.columnCount() + 1;
  auto bold_at = [&](int r, int c) {
    if (r < 0 || c == 0) return true;
    const QVariant f = model.index(r, c - 1).data(Qt::FontRole);
    return f.isValid() && f.value<QFont>().bold();
  };
  const double row = table_row_height();
  const double body_top = rect.top() + setting.header_lines * row;
  painter.setPen(Qt::black);
  double x = rect.left();
  for (int c = 0; c < columns; ++c) {
    const double w = setting.widths[static_cast<std::size_t>(c)];
    const Qt::Alignment align = (c == 0 ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter;
    painter.setFont(bold);
    const QStringList& header = setting.header[static_cast<std::size_t>(c)];
    for (qsizetype line = 0; line < header.size(); ++line) {  // the lines sit on the rule, the last just above it
      const QRectF box(x + 4, body_top - static_cast<double>(header.size() - line) * row, w - 8, row);
      painter.drawText(box, align, QFontMetricsF(bold, layout_device()).elidedText(header[line], Qt::ElideMiddle, box.width()));
    }
    for (int r = 0; r < rows; ++r) {
      const QRectF box(x + 4, body_top + r * row, w - 8, row);
      const QFont& f = bold_at(r, c) ? bold : font;
      painter.setFont(f);
      painter.drawText(box, align, QFontMetricsF(f, layout_device()).elidedText(table_text(model, r, c), Qt::ElideMiddle, box.width()));
    }
    x += w;
  }
  painter.drawLine(QPointF(rect.left(), body_top), QPointF(x, body_top));
}

void draw_panels(QCPPainter& painter, const std::vector<PanelRect>& rects) {
  for (const PanelRect& p : rects) {
    painter.save();
    painter.translate(p.rect.topLeft());
    if (p.panel->plot) {
      p.panel->plot->toPainter(&painter, static_cast<int>(p.rect.width()), static_cast<int>(p.rect.height()));
      p.panel->plot->replot(QCustomPlot::rpQueuedReplot);  // back to its on-screen layout
    } else if (p.panel->table) {
      draw_table(painter, *p.panel->table, QRectF(QPointF(0, 0), p.rect.size()));
    }
    painter.restore();
  }
}

}  // namespace

QSizeF figure_size_inches(const std::vector<FigurePanel>& panels, const FigureOptions& options) {
  QSizeF size;
  lay_out(panels, options, &size);
  return size / (kLayoutDpi * layout_scale(options));
}

bool export_panels(const std::vector<FigurePanel>& panels, const FigureOptions& options, const QString& path, QString* error) {
  const QString ext = export_extension(path, QObject::tr("the figure"), error);
  if (ext.isEmpty()) return false;
  if (panels.empty()) return fail(error, QObject::tr("cannot export '%1': no panel chosen").arg(path));
  for (const FigurePanel& p : panels) p.plot ? p.plot->replot(QCustomPlot::rpImmediateRefresh) : void();
  QSizeF layout_size;
  const std::vector<PanelRect> rects = lay_out(panels, options, &layout_size);
  const QSizeF inches = layout_size / (kLayoutDpi * layout_scale(options));
  bool ok = false;
  if (ext == QLatin1String("png")) {
    const QSize pixels = (inches * options.png_dpi).toSize();
    QImage image(pixels, QImage::Format_ARGB32);  // at 96 dpi while drawing: fonts in points size as in the layout
    image.fill(Qt::white);
    QCPPainter painter;
    ok = painter.begin(&image);
    if (ok) {
      painter.setRenderHint(QPainter::Antialiasing);
      painter.setRenderHint(QPainter::TextAntialiasing);
      painter.scale(pixels.width() / layout_size.width(), pixels.height() / layout_size.height());
      draw_panels(painter, rects);
      ok = painter.end();
      const int dots_per_meter = static_cast<int>(std::lround(options.png_dpi / 0.0254));
      image.setDotsPerMeterX(dots_per_meter);  // the file says its physical size
      image.setDotsPerMeterY(dots_per_meter);
      ok = ok && image.save(path, "PNG");
    }
  } else if (ext == QLatin1String("svg")) {
    QSvgGenerator generator;
    const QSize size = (inches * kLayoutDpi).toSize();
    set_up_svg(generator, path, size, static_cast<int>(kLayoutDpi), QStringLiteral("figure"));
    QCPPainter painter;
    ok = painter.begin(&generator);
    if (ok) {
      painter.setMode(QCPPainter::pmVectorized);
      painter.scale(size.width() / layout_size.width(), size.height() / layout_size.height());
      draw_panels(painter, rects);
      ok = painter.end();
    }
  } else {
    QPdfWriter writer(path);
    writer.setCreator(QStringLiteral("XMC Workbench"));
    writer.setResolution(static_cast<int>(kLayoutDpi));
    writer.setPageSize(QPageSize(inches, QPageSize::Inch));
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    QCPPainter painter;
    ok = painter.begin(&writer);
    if (ok) {
      painter.setMode(QCPPainter::pmVectorized);
      painter.scale(writer.width() / layout_size.width(), writer.height() / layout_size.height());
      draw_panels(painter, rects);
      ok = painter.end();
    }
  }
  return check_written(ok, ext, path, error);
}

}  // namespace xmc::gui
