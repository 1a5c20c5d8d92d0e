#include "app/report_command.h"

#include <QApplication>
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/session/session.h"
#include "engine/session/default_store_path.h"
#include "widgets/runs/report_export.h"

namespace xmc::app {

namespace {

struct ReportArgs {
  std::int64_t run = 0;
  std::string db = default_run_store_path().string();
  std::string out;
};

/// Qt's own warnings (no XDG_RUNTIME_DIR on a server, font fallbacks) are not the command's business:
/// its output is the report line or one error line. Critical and fatal messages still show.
void drop_qt_chatter(QtMsgType type, const QMessageLogContext&, const QString& message) {
  if (type == QtCriticalMsg || type == QtFatalMsg) std::fprintf(stderr, "xmc: qt: %s\n", qPrintable(message));
}

void write_report(const ReportArgs& args) {
  const std::filesystem::path out(args.out);
  const std::string extension = out.extension().string();
  if (extension != ".html" && extension != ".pdf")
    throw ConfigError("--out: \"" + args.out + "\" must end in .html or .pdf");
  // What can be checked without Qt is, before paying for its start-up and the rendering.
  Session::open_existing(args.db).get_run(args.run);
  const std::filesystem::path folder = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    throw Error("--out: " + args.out + ": the folder " + folder.string() + " does not exist");

  // The plots are QCustomPlot widgets rendered to images: they need a QApplication, and the offscreen
  // platform lets it start without a display (a server, CI). Only this command pays for Qt.
  setenv("QT_QPA_PLATFORM", "offscreen", /*overwrite=*/0);
  qInstallMessageHandler(drop_qt_chatter);
  int argc = 1;
  char name[] = "xmc";
  char* argv[] = {name, nullptr};
  const QApplication qt(argc, argv);
  QString error;
  const QString path = QString::fromStdString(out.string());
  const bool ok = extension == ".html" ? gui::export_run_report_html(args.db, args.run, path, &error)
                                       : gui::export_run_report_pdf(args.db, args.run, path, &error);
  if (!ok) throw Error(error.toStdString());
  std::printf("report of run %lld written to %s\n", static_cast<long long>(args.run), out.c_str());
}

}  // namespace

void add_report_command(CLI::App& app, cli::CommandContext&) {
  auto* cmd = app.add_subcommand("report", "Write a run's report (metrics, plots, config, dataset) as HTML or PDF, headless");
  auto args = std::make_shared<ReportArgs>();
  cmd->add_option("--run", args->run, "Run id")->required();
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  cmd->add_option("--out", args->out, "Report file: .html (self-contained) or .pdf")->required();
  cmd->footer(
      "The same report as the workbench's File › Export run report.\n"
      "Examples:\n"
      "  xmc report --db runs.sqlite --run 3 --out run3.html\n"
      "  xmc report --db runs.sqlite --run 3 --out run3.pdf");
  cmd->callback([args] { write_report(*args); });
}

}  // namespace xmc::app
