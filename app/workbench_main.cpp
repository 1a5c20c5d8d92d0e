// xmc-workbench: the Qt desktop workbench.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>

#include <cstdio>
#include <memory>

#include "app/main_window.h"
#include "engine/core/file_size_limit.h"
#include "engine/core/version.h"
#include "engine/session/default_store_path.h"

namespace {

/// Preset configs: next to a source checkout, or installed under share/.
QString find_presets_dir() {
  const QString app_dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {QString(XMC_SOURCE_DIR "/datasets/configs"), app_dir + "/../share/xmc-workbench/configs"})
    if (QFileInfo(candidate).isDir()) return QDir(candidate).absolutePath();
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  xmc::report_file_size_limit_as_write_errors();
  // --help and --version print and exit before a QApplication exists: they must work without a display
  // (QApplication aborts when there is none).
  bool text_only = false;
  for (int i = 1; i < argc; ++i) {
    const QString arg = QString::fromLocal8Bit(argv[i]);
    text_only = text_only || arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "-v" || arg == "--version" || arg == "-?";
  }
  std::unique_ptr<QCoreApplication> app =
      text_only ? std::make_unique<QCoreApplication>(argc, argv) : std::make_unique<QApplication>(argc, argv);
  QCoreApplication::setApplicationName("xmc-workbench");
  QCoreApplication::setApplicationVersion(xmc::kCodeVersion);
  if (!text_only) QApplication::setWindowIcon(QIcon(":/icons/xmc-workbench.svg"));
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "XMC Workbench: train extreme multi-label classifiers, watch them learn, look labels up.\n\n"
      "Example (scripted, headless):\n"
      "  xvfb-run xmc-workbench --dataset datasets/demo/wordnet-20k --config datasets/configs/dexml-bow-wordnet.json \\\n"
      "      --autostart --screenshot s.png --quit-when-done");
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption db(QStringLiteral("db"), "Run store (SQLite). Default: $XMC_DB or ~/.local/share/xmc-workbench/runs.sqlite.", "PATH",
                        QString::fromStdString(xmc::default_run_store_path().string()));
  QCommandLineOption dataset(QStringLiteral("dataset"), "Dataset folder to preselect.", "DIR");
  QCommandLineOption config(QStringLiteral("config"), "Training config (JSON) to load into the launch form.", "FILE");
  QCommandLineOption autostart(QStringLiteral("autostart"), "Start training at once.");
  QCommandLineOption screenshot(QStringLiteral("screenshot"), "Save the window as PNG after the first evaluation and when training ends.", "FILE");
  QCommandLineOption quit(QStringLiteral("quit-when-done"), "Quit when training ends (exit code 0 only if it completed).");
  QCommandLineOption processes(QStringLiteral("processes"), "Train with N processes on this machine (the Launch tab's processes box).", "N",
                               "1");
  parser.addOptions({db, dataset, config, autostart, screenshot, quit, processes});
  parser.process(*app);  // prints and exits for --help and --version

  xmc::app::WorkbenchOptions options;
  options.db = parser.value(db);
  options.dataset = parser.value(dataset);
  options.config = parser.value(config);
  options.autostart = parser.isSet(autostart);
  options.screenshot = parser.value(screenshot);
  options.quit_when_done = parser.isSet(quit);
  bool processes_ok = false;
  options.processes = parser.value(processes).toInt(&processes_ok);
  if (!processes_ok || options.processes < 1) {
    std::fprintf(stderr, "xmc-workbench: --processes: got \"%s\", expected a whole number of at least 1\n", qPrintable(parser.value(processes)));
    return 2;
  }
  options.presets_dir = find_presets_dir();
  QDir().mkpath(QFileInfo(options.db).absolutePath());
  xmc::app::MainWindow window(options);
  window.show();
  return QApplication::exec();
}
