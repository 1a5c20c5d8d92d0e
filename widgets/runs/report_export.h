#pragma once
// Exporting one run of a run store as a report for a paper or a colleague:
//   - HTML: one self-contained file (plots embedded as base64 PNG data URIs, no external files);
//   - PDF:  the same content on A4 pages (QTextDocument + QPdfWriter), plots included;
//   - CSV:  the raw scalars and evaluation metrics, for any other tool.
//
// A report holds: the run's name, id, status, times, code version, device and host; its configuration
// as a key → value table; the dataset's statistics (when the dataset folder still exists); the final
// metrics in % as papers print them (P@1, P@3, P@5, nDCG@k, PSP@k, PSnDCG@k, R@k); and the loss curve,
// metric curves, decile bars and latest t-SNE snapshot rendered at a fixed size.
//
// The report functions render plot widgets offscreen: they need a QApplication and must be called on
// its thread. Loading the dataset for its statistics reads the whole folder (seconds for large ones).
// Every function opens its own connection to the store and returns false with a one-line `error`
// (naming the file or run) instead of throwing.
#include <QString>
#include <cstdint>
#include <filesystem>

namespace xmc::gui {

/// Writes the report of `run` in the store `db` as one self-contained HTML file at `path`.
bool export_run_report_html(const std::filesystem::path& db, std::int64_t run, const QString& path,
                            QString* error = nullptr);

/// Writes the same report as a PDF (A4 portrait) at `path`.
bool export_run_report_pdf(const std::filesystem::path& db, std::int64_t run, const QString& path,
                           QString* error = nullptr);

/// Writes the run's scalars ("step,epoch,key,value,wall_time") to `scalars_path` and its evaluations
/// ("epoch,step,metric,value"; metric values as stored, fractions) to `metrics_path`, each with a
/// header line and one line per record, numbers at full precision, fields quoted as RFC 4180 says.
bool export_run_csv(const std::filesystem::path& db, std::int64_t run, const QString& scalars_path,
                    const QString& metrics_path, QString* error = nullptr);

/// One CSV field: `text` itself, or in double quotes (inner quotes doubled) when it holds a comma,
/// a double quote, a CR or a LF.
QString csv_field(const QString& text);

}  // namespace xmc::gui
