#include "widgets/runs/report_export.h"

#include <cerrno>
#include <QBuffer>
#include <QByteArray>
#include <QDateTime>
#include <QImage>
#include <QPageLayout>
#include <QPageSize>
#include <QPixmap>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QTextDocument>
#include <QTextFrame>
#include <QUrl>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/eval/metric_key.h"
#include "engine/core/write_failure.h"
#include "engine/session/run_config_view.h"
#include "engine/session/session.h"
#include "widgets/plots/decile_plot.h"
#include "widgets/plots/loss_plot.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/runs/table_page_breaks.h"
#include "widgets/plots/tsne_plot.h"

namespace xmc::gui {

namespace {

// Size the plots are rendered at (logical pixels; PNGs are 2× that) and shown at in the report.
constexpr int kPlotWidth = 760;
constexpr int kPlotHeight = 400;
constexpr double kPlotScale = 2.0;
constexpr int kShownWidth = 620;  // fits an A4 page inside 2 cm margins

QString qstr(const std::string& s) { return QString::fromStdString(s); }

QString html(const QString& text) { return text.toHtmlEscaped(); }
QString html(const std::string& text) { return qstr(text).toHtmlEscaped(); }

/// Shortest text that reads back as the same double ("0.1", "1e-05", "nan", "inf").
QString number_text(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), v);
  return QString::fromLatin1(buffer.data(), static_cast<qsizetype>(result.ptr - buffer.data()));
}

QString percent(double fraction) {
  return std::isfinite(fraction) ? QString::number(fraction * 100.0, 'f', 2) : QStringLiteral("—");
}

bool fail(QString* error, const QString& message) {
  if (error) *error = message;
  return false;
}

bool write_file(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return fail(error, QObject::tr("%1: %2").arg(path, file.errorString()));
  if (file.write(bytes) != bytes.size() || !file.commit()) {
    // QSaveFile keeps no cause ("Unknown error" after a file-size limit): look it up.
    const int saved = errno;
    return fail(error, QObject::tr("%1: %2").arg(path, QString::fromStdString(why_write_failed(path.toStdString(),
                                                                                               static_cast<std::uintmax_t>(bytes.size()), saved))));
  }
  return true;
}

// ---- what a report shows ------------------------------------------------------------------------

/// What the report shows, from the Session: plain data, rendered below.
using ReportData = RunReportContent;

ReportData load_report(const std::filesystem::path& db, std::int64_t run) {
  // Open an existing store only: a report of a typo'd path should not create an empty database.
  return Session::open_existing(db).report_content(run);
}

/// Two-column table; `code_keys` sets the keys in a monospace font (configuration keys).
QString key_value_table(const std::vector<std::pair<std::string, std::string>>& rows, bool code_keys = true) {
  QString s = QStringLiteral("<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\" class=\"kv\">\n");
  const QString row = code_keys ? QStringLiteral("<tr><td class=\"key\"><code>%1</code></td><td>%2</td></tr>\n")
                                : QStringLiteral("<tr><td class=\"key\">%1</td><td>%2</td></tr>\n");
  for (const auto& [key, value] : rows) s += row.arg(html(key), html(value));
  return s + QStringLiteral("</table>\n");
}

/// The final evaluation's metrics as a paper table: one row per family (and prefix), one column per k.
QString final_metric_table(const std::vector<EvalPoint>& evaluations) {
  if (evaluations.empty()) return QStringLiteral("<p class=\"note\">%1</p>\n").arg(QObject::tr("The run has no evaluations."));
  const std::int64_t last_step = evaluations.back().step;
  double epoch = evaluations.back().epoch;
  // (prefix rank, family rank, prefix, family) -> k -> value
  using RowKey = std::tuple<bool, int, std::string, std::string>;
  std::map<RowKey, std::map<int, double>> rows;
  std::set<int> ks;
  for (const EvalPoint& p : evaluations) {
    if (p.step != last_step) continue;
    epoch = p.epoch;
    const MetricKey m = MetricKey::parse(p.metric);
    rows[{!m.is_primary(), m.family_rank(), m.is_primary() ? std::string() : m.mode + "/", m.family}][m.k] = p.value;
    ks.insert(m.k);
  }
  QString s = QStringLiteral("<p>%1</p>\n").arg(
      QObject::tr("Final evaluation at epoch %1 (step %2), in %.").arg(number_text(epoch)).arg(last_step));
  s += QStringLiteral("<table border=\"1\" cellspacing=\"0\" cellpadding=\"4\" class=\"metrics\">\n<tr><th>%1</th>")
           .arg(QObject::tr("Metric"));
  for (int k : ks) s += k < 0 ? QStringLiteral("<th>—</th>") : QStringLiteral("<th>@%1</th>").arg(k);
  s += QStringLiteral("</tr>\n");
  for (const auto& [key, values] : rows) {
    const std::string& prefix = std::get<2>(key);
    const std::string& family = std::get<3>(key);
    s += QStringLiteral("<tr><th class=\"metric\">%1</th>").arg(html(prefix + family + "@k"));
    for (int k : ks) {
      auto it = values.find(k);
      s += QStringLiteral("<td class=\"num\" title=\"%1\">%2</td>")
               .arg(html(prefix + family + (k < 0 ? std::string() : "@" + std::to_string(k))),
                    it == values.end() ? QStringLiteral("") : percent(it->second));
    }
    s += QStringLiteral("</tr>\n");
  }
  return s + QStringLiteral("</table>\n");
}

// ---- plots ----------------------------------------------------------------------------------------

struct ReportImage {
  QString title;
  QString caption;
  QImage image;
};

QImage render(QCustomPlot& plot) {
  plot.resize(kPlotWidth, kPlotHeight);
  plot.replot(QCustomPlot::rpImmediateRefresh);
  return plot.toPixmap(kPlotWidth, kPlotHeight, kPlotScale).toImage();
}

std::vector<ReportImage> render_plots(const ReportData& d) {
  std::vector<ReportImage> images;
  if (!d.scalars.empty()) {
    LossPlot plot;
    plot.set_series(d.scalars);
    if (plot.point_count() > 0)
      images.push_back({QObject::tr("Training loss"),
                        QObject::tr("Loss per optimiser step (raw and smoothed) with the learning rate."), render(plot)});
  }
  if (!d.evaluations.empty()) {
    MetricPlot plot;
    plot.set_evaluations(d.evaluations);
    images.push_back({QObject::tr("Metrics over training"), QObject::tr("Evaluation metrics (%) by epoch."), render(plot)});
  }
  // The latest table of each decile metric, P@5 first.
  std::map<std::string, const DecileTable*> latest;
  for (const DecileTable& t : d.deciles)
    if (t.bins.size() == 10) latest[t.metric] = &t;  // tables come by epoch: the last one wins
  std::vector<const DecileTable*> tables;
  if (auto it = latest.find("P@5"); it != latest.end()) tables.push_back(it->second);
  for (const auto& [metric, table] : latest)
    if (metric != "P@5") tables.push_back(table);
  for (const DecileTable* t : tables) {
    DecilePlot plot;
    std::array<double, 10> bins{};
    std::copy(t->bins.begin(), t->bins.end(), bins.begin());
    plot.set_metric(qstr(t->metric));
    plot.set_bars(qstr(d.info.name), bins);
    images.push_back({QObject::tr("Decile-wise %1").arg(qstr(t->metric)),
                      QObject::tr("%1 per label decile at epoch %2: decile 1 holds the most frequent (head) labels, "
                                  "decile 10 the rarest (tail).")
                          .arg(qstr(t->metric), number_text(t->epoch)),
                      render(plot)});
  }
  if (d.tsne) {
    TsnePlot plot;
    plot.set_snapshot(d.tsne->payload_json);
    images.push_back({QObject::tr("t-SNE snapshot"),
                      QObject::tr("Latest t-SNE snapshot (epoch %1, query %2).").arg(number_text(d.tsne->epoch)).arg(d.tsne->query),
                      render(plot)});
  }
  return images;
}

QByteArray png_bytes(const QImage& image) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  image.save(&buffer, "PNG");
  return bytes;
}

// ---- the document -----------------------------------------------------------------------------------

/// The whole report as HTML; `image_src(i)` gives the src of images[i] (data URI or resource name).
QString report_html(const ReportData& d, const std::vector<ReportImage>& images,
                    const std::function<QString(std::size_t)>& image_src) {
  const RunInfo& r = d.info;
  const QString title = QObject::tr("Run %1 — %2").arg(r.id).arg(qstr(r.name));
  QString s;
  s += QStringLiteral(
           "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>") + html(title) + QStringLiteral("</title>\n<style>\n"
           "body { font-family: 'DejaVu Sans', Helvetica, Arial, sans-serif; font-size: 10pt; max-width: 52em; margin: 2em auto; color: #222; }\n"
           "h1 { font-size: 17pt; margin-bottom: 0.2em; } h2 { font-size: 13pt; margin-top: 1.4em; border-bottom: 1px solid #bbb; }\n"
           "table { border-collapse: collapse; margin: 0.4em 0; } th, td { border: 1px solid #bbb; padding: 3px 6px; }\n"
           "th { background: #f0f0f0; text-align: left; } td.num { text-align: right; font-family: 'DejaVu Sans Mono', monospace; }\n"
           "td.key { color: #444; } .note { color: #666; font-style: italic; } .failed { color: #c62828; }\n"
           "img { max-width: 100%; } p.caption { color: #444; margin-bottom: 1.2em; }\n"
           "</style></head><body>\n");
  s += QStringLiteral("<h1>%1</h1>\n").arg(html(title));
  s += QStringLiteral("<p class=\"note\">%1</p>\n")
           .arg(html(QObject::tr("XMC Workbench report, generated %1")
                         .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))));

  s += QStringLiteral("<h2>%1</h2>\n").arg(QObject::tr("Run"));
  std::vector<std::pair<std::string, std::string>> run_rows = {
      {"name", r.name},
      {"id", std::to_string(r.id)},
      {"status", to_string(r.status)},
      {"created", r.created},
      {"updated", r.updated},
      {"code version", r.code_version},
      {"device", r.device},
      {"host", r.host},
      {"dataset", r.dataset_path},
      {"dataset fingerprint", r.dataset_fingerprint},
  };
  if (!r.tags.empty()) {
    std::string tags;
    for (const auto& t : r.tags) tags += (tags.empty() ? "" : ", ") + t;
    run_rows.emplace_back("tags", tags);
  }
  if (!r.notes.empty()) run_rows.emplace_back("notes", r.notes);
  if (!r.last_error.empty()) run_rows.emplace_back("last error", r.last_error);
  if (const std::string use = system_use_text(summarize_system_use(d.scalars)); !use.empty())
    run_rows.emplace_back("system use", use + " (the training process)");
  for (const Artifact& a : d.artifacts) run_rows.emplace_back("artifact: " + a.kind, a.path);
  s += key_value_table(run_rows, false);

  s += QStringLiteral("<h2>%1</h2>\n").arg(QObject::tr("Final metrics"));
  s += final_metric_table(d.evaluations);

  // Plots start a page: printed, they never leave their section heading alone at a page's bottom.
  s += QStringLiteral("<h2 style=\"page-break-before: always\">%1</h2>\n").arg(QObject::tr("Plots"));
  if (images.empty()) s += QStringLiteral("<p class=\"note\">%1</p>\n").arg(QObject::tr("The run recorded nothing to plot yet."));
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ReportImage& img = images[i];
    // The plot carries its own title; the caption follows it (no heading that printing could strand at
    // the bottom of a page with its plot on the next).
    s += QStringLiteral("<p class=\"figure\"><img src=\"%1\" width=\"%2\" alt=\"%3\"></p>\n"
                        "<p class=\"caption\"><b>%4 %5.</b> %3. %6</p>\n")
             .arg(image_src(i), QString::number(kShownWidth), html(img.title), QObject::tr("Figure"),
                  QString::number(i + 1), html(img.caption));
  }

  s += QStringLiteral("<h2>%1</h2>\n").arg(QObject::tr("Configuration"));
  try {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& [key, value] : *flat_run_config(r.config_json)) rows.emplace_back(key, value);
    // A value the run chose while training is shown as used, beside the configured one.
    for (const ChosenSetting& chosen : chosen_settings(d.scalars)) {
      const auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& kv) { return kv.first == chosen.key; });
      if (row != rows.end()) row->second = chosen_value_text(chosen, row->second);
      else rows.emplace_back(chosen.key, chosen_value_text(chosen, std::string()));
    }
    const std::vector<std::string> left_out = keys_not_shaping_run(r.config_json);
    auto is_left_out = [&](const std::string& key) { return std::find(left_out.begin(), left_out.end(), key) != left_out.end(); };
    // Named by group ("irene.*") where the whole group is left out, else key by key.
    std::map<std::string, std::pair<int, int>> by_prefix;  // prefix -> (rows, rows left out)
    auto prefix_of = [](const std::string& key) { return key.find('.') == std::string::npos ? key : key.substr(0, key.find('.')); };
    for (const auto& [key, value] : rows) {
      auto& [all, out] = by_prefix[prefix_of(key)];
      ++all;
      if (is_left_out(key)) ++out;
    }
    std::set<std::string> names;
    for (const std::string& key : left_out) {
      const auto& [all, out] = by_prefix[prefix_of(key)];
      names.insert(all == out && key.find('.') != std::string::npos ? prefix_of(key) + ".*" : key);
    }
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const auto& kv) { return is_left_out(kv.first); }), rows.end());
    if (rows.empty() && left_out.empty()) s += QStringLiteral("<p class=\"note\">%1</p>\n").arg(QObject::tr("Empty configuration."));
    else s += key_value_table(rows);
    if (!left_out.empty()) {
      QStringList listed;
      for (const std::string& name : names) listed << QString::fromStdString(name);
      const QString count = left_out.size() == 1 ? QObject::tr("1 key that does not shape this run is left out")
                                                 : QObject::tr("%1 keys that do not shape this run are left out").arg(left_out.size());
      s += QStringLiteral("<p class=\"note\">%1</p>\n")
               .arg(html(QObject::tr("%1 (%2); `xmc runs show %3` lists the whole configuration.").arg(count, listed.join(QStringLiteral(", ")))
                             .arg(r.id)));
    }
  } catch (const std::exception&) {
    s += QStringLiteral("<pre>%1</pre>\n").arg(html(r.config_json));
  }

  s += QStringLiteral("<h2>%1</h2>\n").arg(QObject::tr("Dataset"));
  if (d.dataset) {
    // to_text's lines are "what        value": the readable names ("train points (N)") become the keys.
    std::vector<std::pair<std::string, std::string>> rows;
    static const QRegularExpression split(QStringLiteral("^(\\S.*?\\S)\\s{2,}(\\S.*)$"));
    for (const QString& line : qstr(to_text(*d.dataset)).split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
      const QRegularExpressionMatch m = split.match(line);
      if (m.hasMatch()) rows.emplace_back(m.captured(1).toStdString(), m.captured(2).toStdString());
      else rows.emplace_back(line.trimmed().toStdString(), std::string());
    }
    s += key_value_table(rows, false);
  }
  if (!d.dataset_note.empty()) s += QStringLiteral("<p class=\"note\">%1</p>\n").arg(html(d.dataset_note));

  // Last, as an appendix: what the run went through and decided, at the optimiser step it came at.
  if (!d.log.empty()) {
    s += QStringLiteral("<h2>%1</h2>\n").arg(QObject::tr("Log"));
    std::vector<std::pair<std::string, std::string>> rows;
    for (const LogLine& line : d.log) rows.emplace_back("step " + std::to_string(line.step), line.message);
    s += key_value_table(rows, false);
  }

  s += QStringLiteral("</body></html>\n");
  return s;
}

QString error_text(const std::exception& e) { return QString::fromUtf8(e.what()); }

}  // namespace

QString csv_field(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')) &&
      !text.contains(QLatin1Char('\r')))
    return text;
  QString quoted = text;
  quoted.replace(QLatin1Char('"'), QStringLiteral("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

bool export_run_report_html(const std::filesystem::path& db, std::int64_t run, const QString& path, QString* error) {
  try {
    const ReportData d = load_report(db, run);
    const std::vector<ReportImage> images = render_plots(d);
    const QString text = report_html(d, images, [&](std::size_t i) {
      return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png_bytes(images[i].image).toBase64());
    });
    return write_file(path, text.toUtf8(), error);
  } catch (const std::exception& e) {
    return fail(error, error_text(e));
  }
}

bool export_run_report_pdf(const std::filesystem::path& db, std::int64_t run, const QString& path, QString* error) {
  try {
    const ReportData d = load_report(db, run);
    const std::vector<ReportImage> images = render_plots(d);
    QTextDocument doc;
    QFont font = doc.defaultFont();
    font.setPointSizeF(9.5);
    doc.setDefaultFont(font);
    for (std::size_t i = 0; i < images.size(); ++i) {
      QImage shown = images[i].image;
      shown.setDevicePixelRatio(kPlotScale);  // laid out at the logical size, printed at full resolution
      doc.addResource(QTextDocument::ImageResource, QUrl(QStringLiteral("xmc-report-image-%1.png").arg(i)), shown);
    }
    doc.setHtml(report_html(d, images, [](std::size_t i) { return QStringLiteral("xmc-report-image-%1.png").arg(i); }));
    // Laid out as A4 at the document's 96 dpi (print() scales it to the writer), so that table rows that
    // would be split across pages can be moved to the next page first.
    doc.setPageSize(QSizeF(210.0 / 25.4 * 96.0, 297.0 / 25.4 * 96.0));
    QTextFrameFormat page_margins = doc.rootFrame()->frameFormat();
    page_margins.setMargin(2.0 / 2.54 * 96.0);  // 2 cm, as print() gives a document without a page size
    doc.rootFrame()->setFrameFormat(page_margins);
    keep_table_rows_whole(doc);

    // Rendered in memory and saved like the HTML: an unwritable path fails with its reason, and a failed
    // export leaves no half-written file.
    QByteArray pdf;
    {
      QBuffer buffer(&pdf);
      buffer.open(QIODevice::WriteOnly);
      QPdfWriter writer(&buffer);  // 1200 dpi
      writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
      writer.setTitle(QObject::tr("Run %1 — %2").arg(d.info.id).arg(qstr(d.info.name)));
      writer.setCreator(QStringLiteral("XMC Workbench"));
      doc.print(&writer);
    }
    return write_file(path, pdf, error);
  } catch (const std::exception& e) {
    return fail(error, error_text(e));
  }
}

bool export_run_csv(const std::filesystem::path& db, std::int64_t run, const QString& scalars_path,
                    const QString& metrics_path, QString* error) {
  try {
    const Session session = Session::open_existing(db);
    session.get_run(run);  // names the run when it does not exist
    QString scalars = QStringLiteral("step,epoch,key,value,wall_time\n");
    for (const ScalarPoint& p : session.scalars(run))
      scalars += QStringLiteral("%1,%2,%3,%4,%5\n")
                     .arg(p.step)
                     .arg(number_text(p.epoch), csv_field(qstr(p.key)), number_text(p.value), number_text(p.wall_time));
    QString metrics = QStringLiteral("epoch,step,metric,value\n");
    for (const EvalPoint& p : session.evaluations(run))
      metrics += QStringLiteral("%1,%2,%3,%4\n").arg(number_text(p.epoch)).arg(p.step).arg(csv_field(qstr(p.metric)), number_text(p.value));
    return write_file(scalars_path, scalars.toUtf8(), error) && write_file(metrics_path, metrics.toUtf8(), error);
  } catch (const std::exception& e) {
    return fail(error, error_text(e));
  }
}

}  // namespace xmc::gui
