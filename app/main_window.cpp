#include "app/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QInputDialog>
#include <QtConcurrent/QtConcurrent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSettings>
#include <QMenuBar>
#include <QMessageBox>
#include <QComboBox>
#include <QProgressBar>
#include <QPushButton>
#include <QDateTime>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/eval/metric_key.h"
#include "engine/session/run_config_view.h"
#include "engine/session/run_import.h"
#include "engine/session/session.h"
#include "engine/records/evaluation_modes.h"
#include "engine/config/train_config.h"
#include "engine/records/training_milestones.h"
#include "widgets/file_dialogs.h"
#include "widgets/compare/compare_view.h"
#include "widgets/plots/decile_plot.h"
#include "widgets/labels/label_quality_view.h"
#include "widgets/live/launch_form.h"
#include "widgets/live/live_view.h"
#include "widgets/plots/loss_plot.h"
#include "widgets/plots/evaluation_view.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/plots/plot_export.h"
#include "widgets/projector/projector_view.h"
#include "widgets/runs/report_export.h"
#include "widgets/runs/runs_browser.h"
#include "widgets/search/search_panel.h"
#include "widgets/live/sweep_dialog.h"
#include "widgets/live/synthetic_dataset_dialog.h"
#include "widgets/live/training_progress.h"
#include "widgets/live/training_worker.h"
#include "widgets/plots/tsne_plot.h"

namespace xmc::app {
namespace {

/// The epochs `info`'s run plans, all stages counted; `fallback` for a config this version cannot read.
double planned_epochs(const RunInfo& info, double fallback) {
  const std::shared_ptr<const TrainConfig> config = stored_train_config(info.config_json);
  return config ? static_cast<double>(total_epochs(*config)) : fallback;
}

/// `info`'s run config, or Error saying why this version cannot read it.
std::shared_ptr<const TrainConfig> readable_config(const RunInfo& info) {
  std::string why;
  std::shared_ptr<const TrainConfig> config = stored_train_config(info.config_json, &why);
  if (!config) throw Error("run " + std::to_string(info.id) + ": " + why);
  return config;
}

/// `content` in a scroll area: below the content's minimum size the tab scrolls, so the window can be made
/// as small as a screen needs (a tab's minimum size is the whole window's).
QScrollArea* scrolling(QWidget* content) {
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(content);
  return scroll;
}

/// Where the window keeps its geometry and the Runs tab's split (QSettings).
const QString kGeometrySetting = QStringLiteral("window/geometry");
const QString kRunsSplitSetting = QStringLiteral("window/runs-split");

/// Appended to the run label of a stopped run.
const QString kContinueHint = QStringLiteral(" — Training › Continue the shown stopped run resumes it");

}  // namespace

MainWindow::MainWindow(WorkbenchOptions options, QWidget* parent) : QMainWindow(parent), options_(std::move(options)) {
  setWindowTitle("XMC Workbench — " + QFileInfo(options_.db).fileName());
  worker_ = new gui::TrainingWorker(this);
  tabs_ = new QTabWidget;

  launch_ = new gui::LaunchForm(options_.presets_dir);
  connect(launch_, &gui::LaunchForm::base_run_choices_needed, this, [this] { refresh_base_run_choices(); });
  tabs_->addTab(launch_, "Launch");

  live_ = new gui::LiveView(options_.db);
  tabs_->addTab(live_, "Live");
  connect(live_, &gui::LiveView::evaluated, this, [this](double epoch, double spread, double mean) { show_collapse_state(epoch, spread, mean); });
  connect(live_, &gui::LiveView::message, this, [this](const QString& text) { statusBar()->showMessage(text, 8000); });

  search_ = new gui::SearchPanel;
  tabs_->addTab(search_, "Search");
  labels_ = new gui::LabelQualityView;
  tabs_->addTab(scrolling(labels_), "Labels");
  // A tail label's missed query, double-clicked: its ranking in Search, every mode side by side.
  connect(labels_, &gui::LabelQualityView::query_chosen, this, [this](const QString& text) { search_for(text); });
  projector_ = new gui::ProjectorView;
  tabs_->addTab(projector_, "Projector");

  tabs_->addTab(scrolling(build_runs_tab()), "Runs");
  setCentralWidget(tabs_);

  build_menus();

  // Wiring.
  connect(launch_, &gui::LaunchForm::start_requested, this, [this] { start_training(); });
  connect(launch_, &gui::LaunchForm::sweep_requested, this, [this] { open_sweep_dialog(); });
  connect(launch_, &gui::LaunchForm::pause_requested, this, [this] {
    worker_->set_paused(true);
    set_training_state(gui::LaunchForm::State::Paused);
  });
  connect(launch_, &gui::LaunchForm::resume_requested, this, [this] {
    worker_->set_paused(false);
    set_training_state(gui::LaunchForm::State::Running);
  });
  connect(launch_, &gui::LaunchForm::stop_requested, this, [this] { stop_training(); });
  connect(worker_, &gui::TrainingWorker::event, this, &MainWindow::on_event);
  connect(worker_, &gui::TrainingWorker::ended, this, &MainWindow::on_ended);
  connect(worker_, &gui::TrainingWorker::point_started, this, &MainWindow::on_point_started);
  connect(worker_->progress(), &gui::QtProgress::progressed, live_->progress(), &gui::TrainingProgress::on_task);
  connect(worker_->progress(), &gui::QtProgress::finished, live_->progress(), &gui::TrainingProgress::on_task_finished);
  connect_runs_browser();
  follow_timer_ = new QTimer(this);
  follow_timer_->setInterval(2000);
  connect(follow_timer_, &QTimer::timeout, this, [this] { reload_followed_run(); });

  if (!options_.config.isEmpty()) {
    try {
      launch_->set_config(load_train_config(options_.config.toStdString()));
      launch_->mark_preset(options_.config);
    } catch (const std::exception& e) {
      report_error("Cannot load the config", QString::fromUtf8(e.what()));
    }
  }
  if (!options_.dataset.isEmpty()) launch_->set_dataset(options_.dataset);
  build_job_status();
  statusBar()->showMessage("Run store: " + options_.db);
  resize(1400, 900);
  // The window's size and place and the Runs tab's split come back as they were left.
  const QSettings settings;
  if (const QByteArray geometry = settings.value(kGeometrySetting).toByteArray(); !geometry.isEmpty()) restoreGeometry(geometry);
  if (const QByteArray split = settings.value(kRunsSplitSetting).toByteArray(); !split.isEmpty()) runs_tab_->restoreState(split);
  if (!options_.screenshot.isEmpty()) {  // a screenshot that cannot be written fails now, not after training
    const QString folder = QFileInfo(options_.screenshot).absolutePath();
    if (!QDir().mkpath(folder) || !QFileInfo(folder).isWritable())
      report_error("Cannot write screenshots", folder + " is not a folder that can be created and written to");
  }
  set_training_state(gui::LaunchForm::State::Idle);
  if (options_.processes > 1) launch_->set_processes(options_.processes);
  if (options_.autostart && !failed_) QTimer::singleShot(0, this, [this] { start_training(); });
}

QSplitter* MainWindow::build_runs_tab() {
  runs_tab_ = new QSplitter(Qt::Vertical);
  runs_tab_->setObjectName("runs_split");
  runs_ = new gui::RunsBrowser(options_.db.toStdString());
  compare_ = new gui::CompareView;
  runs_tab_->addWidget(runs_);
  runs_tab_->addWidget(compare_);
  // The runs table keeps room for a dozen rows; the comparison below shrinks first (its plots have small
  // minimum sizes there) and the splitter handle moves the border either way.
  runs_->setMinimumHeight(240);
  runs_tab_->setChildrenCollapsible(false);
  runs_tab_->setStretchFactor(0, 2);
  runs_tab_->setStretchFactor(1, 3);
  runs_tab_->setSizes({300, 700});
  runs_->set_follow(true);  // runs written by other processes (xmc train) appear and update live
  return runs_tab_;
}

void MainWindow::search_for(const QString& text) {
  tabs_->setCurrentWidget(search_);
  if (search_->ready()) {
    search_->search(text);
    return;
  }
  auto once = std::make_shared<QMetaObject::Connection>();
  *once = connect(search_, &gui::SearchPanel::run_loaded, this, [this, text, once] {
    disconnect(*once);
    search_->search(text);
  });
}

void MainWindow::build_menus() {
  auto* file = menuBar()->addMenu("&File");
  file->addAction("Open run store…", this, [this] { open_store(); });
  file->addAction("Import runs from another store…", this, [this] {
    const QString path = xmc::gui::open_file_name(this, "Import runs from", QFileInfo(options_.db).path(), "SQLite (*.sqlite *.db);;All files (*)");
    if (!path.isEmpty()) import_runs_from(path);
  });
  file->addSeparator();
  file->addAction("Export run report (HTML)…", this, [this] { export_report("html"); });
  file->addAction("Export run report (PDF)…", this, [this] { export_report("pdf"); });
  file->addAction("Export run scalars and metrics (CSV)…", this, [this] { export_report("csv"); });
  file->addAction("Export live plots (PNG, SVG, PDF)…", this, [this] { export_current_plots(); });
  file->addSeparator();
  file->addAction("Quit", QKeySequence::Quit, this, [this] { close(); });
  auto* training = menuBar()->addMenu("&Training");
  start_action_ = training->addAction("Start", this, [this] { start_training(); });
  pause_action_ = training->addAction("Pause", this, [this] {
    worker_->set_paused(true);
    set_training_state(gui::LaunchForm::State::Paused);
  });
  resume_action_ = training->addAction("Resume", this, [this] {
    worker_->set_paused(false);
    set_training_state(gui::LaunchForm::State::Running);
  });
  stop_action_ = training->addAction("Stop (with checkpoint)", this, [this] { stop_training(); });
  training->addSeparator();
  continue_action_ = training->addAction("Continue the shown stopped run", this, [this] { continue_shown_run(); });
  continue_action_->setObjectName("continue_run");
  continue_action_->setToolTip("Resume the run shown in the Live tab from its checkpoint (it was stopped)");
  training->addAction("Sweep over a grid of values…", this, [this] { open_sweep_dialog(); });
  training->addAction("Resume a sweep…", this, [this] { choose_sweep_to_resume(); });
  auto* datasets = menuBar()->addMenu("&Datasets");
  datasets->addAction("Build WordNet dataset…", this, [this] { build_wordnet_dataset(); });
  datasets->addAction("Build synthetic dataset (LF-shaped, any size)…", this, [this] { build_synthetic_dataset(); });
  datasets->addAction("Import mulan dataset (ARFF + XML)…", this, [this] { import_mulan_dataset(); });
  auto* help = menuBar()->addMenu("&Help");
  help->addAction("About", this, [this] {
    QMessageBox::about(this, "XMC Workbench",
                       "Extreme multi-label classification workbench.\nRun store: " + options_.db +
                           "\nEvery run is recorded there; the `xmc` command line reads and writes the same store.");
  });

}

void MainWindow::build_job_status() {
  // Background dataset jobs report here, with a Cancel button.
  job_progress_ = new QProgressBar;
  job_progress_->setMaximumWidth(320);
  job_progress_->setVisible(false);
  job_cancel_ = new QPushButton("Cancel");
  job_cancel_->setVisible(false);
  statusBar()->addPermanentWidget(job_progress_);
  statusBar()->addPermanentWidget(job_cancel_);
  job_reporter_ = new gui::QtProgress(this);
  connect(job_cancel_, &QPushButton::clicked, this, [this] { job_reporter_->cancel(); });
  connect(job_reporter_, &gui::QtProgress::progressed, this, [this](const QString& task, qint64 done, qint64 total, double eta) {
    gui::TrainingProgress::show_counts(job_progress_, done, total);
    job_progress_->setFormat(task + " — %p%" + (eta >= 0 ? ", " + gui::TrainingProgress::format_eta(eta) : QString()));
  });
}

MainWindow::~MainWindow() {
  // A dataset build or import still running reports to job_reporter_ (a child of this window): cancel
  // it and wait, so it never outlives what it reports to.
  if (dataset_job_.isRunning()) {
    job_reporter_->cancel();
    dataset_job_.waitForFinished();
  }
}

void MainWindow::run_dataset_job(const QString& title, const QString& out, std::function<void(Progress&)> job) {
  if (job_progress_->isVisible()) {
    QMessageBox::information(this, title, "Another dataset job is still running.");
    return;
  }
  job_reporter_->reset();
  job_progress_->setVisible(true);
  job_cancel_->setVisible(true);
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, title, out] {
    const QString error = watcher->result();
    watcher->deleteLater();
    job_progress_->setVisible(false);
    job_cancel_->setVisible(false);
    if (!error.isEmpty()) {
      QMessageBox::warning(this, title, error);
      return;
    }
    statusBar()->showMessage(title + ": wrote " + out, 8000);
    launch_->set_dataset(out);
    Q_EMIT dataset_ready(out);
    tabs_->setCurrentIndex(0);
  });
  gui::QtProgress* reporter = job_reporter_;
  dataset_job_ = QtConcurrent::run([reporter, job]() -> QString {
    try {
      job(*reporter);
      return {};
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  });
  watcher->setFuture(dataset_job_);
}

void MainWindow::build_wordnet_dataset() {
  const QString out = xmc::gui::existing_directory(this, "Empty folder for the WordNet dataset");
  if (out.isEmpty()) return;
  bool ok = false;
  const int items = QInputDialog::getInt(this, "WordNet dataset", "Noun synsets to sample (0 = all 82,115):", 20000, 0, 100000, 1000, &ok);
  if (!ok) return;
  start_wordnet_build(out, items);
}

void MainWindow::start_wordnet_build(const QString& out, int items) {
  run_dataset_job("Build WordNet dataset", out, [out, items](Progress& progress) {
    WordnetBuildOptions options;
    options.max_items = items;
    Session::build_wordnet_dataset_folder(options, out.toStdString(), progress);
  });
}

void MainWindow::build_synthetic_dataset() {
  gui::SyntheticDatasetDialog dialog(this);
  if (dialog.exec() != QDialog::Accepted) return;
  const QString out = xmc::gui::existing_directory(this, "Empty folder for the synthetic dataset");
  if (out.isEmpty()) return;
  start_synthetic_build(out, dialog.options());
}

void MainWindow::start_synthetic_build(const QString& out, const SyntheticBuildOptions& options) {
  run_dataset_job("Build synthetic dataset", out, [out, options](Progress& progress) { Session::build_synthetic_dataset_folder(options, out.toStdString(), progress); });
}

void MainWindow::import_mulan_dataset() {
  const QString train = xmc::gui::open_file_name(this, "Train ARFF", QString(), "ARFF (*.arff)");
  if (train.isEmpty()) return;
  const QString test = xmc::gui::open_file_name(this, "Test ARFF", QFileInfo(train).path(), "ARFF (*.arff)");
  if (test.isEmpty()) return;
  const QString labels = xmc::gui::open_file_name(this, "Labels XML", QFileInfo(train).path(), "XML (*.xml)");
  if (labels.isEmpty()) return;
  const QString out = xmc::gui::existing_directory(this, "Empty folder for the imported dataset");
  if (out.isEmpty()) return;
  run_dataset_job("Import mulan dataset", out, [=](Progress& progress) {
    MulanImportOptions options;
    options.train_arff = train.toStdString();
    options.test_arff = test.toStdString();
    options.labels_xml = labels.toStdString();
    Session::import_mulan_dataset_folder(options, out.toStdString(), progress);
  });
}

void MainWindow::connect_runs_browser() {
  connect(runs_, &gui::RunsBrowser::run_activated, this, [this](std::int64_t run) { show_run(run); });
  connect(runs_, &gui::RunsBrowser::compare_requested, this, [this](const std::vector<std::int64_t>& ids) {
    compare_->set_runs(Session(options_.db.toStdString()), ids);
  });
}

void MainWindow::start_training() {
  if (worker_->running()) return;
  try {
    const TrainConfig config = launch_->config();
    validate(config);
    const std::int64_t run = worker_->start(config, options_.db, launch_->processes());
    launch_->clear_chosen();  // what the last run chose is not this one's
    const int processes = launch_->processes();
    live_->begin_run(run, config,
                     QString("Run %1: %2%3")
                         .arg(run)
                         .arg(QString::fromStdString(config.name.empty() ? config.method : config.name))
                         .arg(processes > 1 ? QString(" (%1 processes)").arg(processes) : QString()));
    set_training_state(gui::LaunchForm::State::Running);
    tabs_->setCurrentIndex(1);
    runs_->refresh();
  } catch (const std::exception& e) {
    report_error("Cannot start training", QString::fromUtf8(e.what()));
  }
}

std::int64_t MainWindow::start_sweep(const std::vector<SweepAxis>& axes, const QString& name) {
  if (worker_->running()) return 0;
  try {
    const TrainConfig config = launch_->config();
    validate(config);
    const SweepInfo sweep = Session(options_.db.toStdString()).create_sweep(config, axes, name.toStdString());
    resume_sweep(sweep.id);
    return worker_->sweep_id() == sweep.id ? sweep.id : 0;
  } catch (const std::exception& e) {
    report_error("Cannot start the sweep", QString::fromUtf8(e.what()));
    return 0;
  }
}

void MainWindow::resume_sweep(std::int64_t sweep) {
  if (worker_->running()) return;
  try {
    worker_->start_sweep(sweep, options_.db);
    follow_timer_->stop();
    live_->set_label(QString("Sweep %1: starting").arg(sweep));
    set_training_state(gui::LaunchForm::State::Running);
    tabs_->setCurrentIndex(1);
  } catch (const std::exception& e) {
    report_error("Cannot run sweep " + QString::number(sweep), QString::fromUtf8(e.what()));
  }
}

void MainWindow::on_point_started(std::int64_t sweep, std::int64_t position, std::int64_t points, std::int64_t run) {
  try {
    const Session session(options_.db.toStdString());
    const RunInfo info = session.get_run(run);
    live_->begin_run(run, *readable_config(info),
                     QString("Sweep %1, point %2 of %3 — run %4: %5").arg(sweep).arg(position + 1).arg(points).arg(run).arg(QString::fromStdString(info.name)));
    if (worker_->paused()) live_->progress()->set_paused(true);
    runs_->refresh();
  } catch (const std::exception& e) {
    statusBar()->showMessage("Sweep " + QString::number(sweep) + ": " + QString::fromUtf8(e.what()), 8000);
  }
}

void MainWindow::open_sweep_dialog() {
  if (worker_->running()) return;
  gui::SweepDialog dialog(this);
  if (dialog.exec() != QDialog::Accepted) return;
  start_sweep(dialog.axes(), dialog.sweep_name());
}

void MainWindow::choose_sweep_to_resume() {
  if (worker_->running()) return;
  try {
    const Session session(options_.db.toStdString());
    QStringList items;
    std::vector<std::int64_t> ids;
    for (const SweepInfo& sweep : session.list_sweeps()) {
      int done = 0;
      for (const SweepPoint& p : sweep.points) {
        const auto run = p.run > 0 ? session.find_run(p.run) : std::nullopt;
        if (run && run->status == RunStatus::Completed) ++done;
      }
      if (done == static_cast<int>(sweep.points.size())) continue;
      items << QString("sweep %1: %2 (%3 of %4 points done)").arg(sweep.id).arg(QString::fromStdString(sweep.name)).arg(done).arg(sweep.points.size());
      ids.push_back(sweep.id);
    }
    if (items.isEmpty()) {
      QMessageBox::information(this, "Resume a sweep", "Every sweep in this store is complete.");
      return;
    }
    bool ok = false;
    const QString chosen = QInputDialog::getItem(this, "Resume a sweep", "Sweep:", items, 0, false, &ok);
    if (ok) resume_sweep(ids[static_cast<std::size_t>(items.indexOf(chosen))]);
  } catch (const std::exception& e) {
    report_error("Cannot list the sweeps", QString::fromUtf8(e.what()));
  }
}

void MainWindow::on_event(const TrainEvent& e) {
  live_->on_event(e);
  if (e.kind == TrainEvent::Kind::SettingChosen) launch_->show_chosen(e.message, e.value);
  // The first-evaluation screenshot waits for the evaluation's t-SNE snapshot: the next event after the
  // Evaluation is either that Snapshot or, when none is taken, the run moving on.
  if (first_screenshot_pending_ && e.kind != TrainEvent::Kind::Evaluation && e.kind != TrainEvent::Kind::Phase) {
    first_screenshot_pending_ = false;
    QTimer::singleShot(300, this, [this] {  // let the plots repaint before grabbing
      save_screenshot(options_.screenshot);
      save_screenshot(screenshot_path("first-evaluation"));
    });
  }
  if (e.kind == TrainEvent::Kind::Phase) statusBar()->showMessage(QString::fromStdString(e.message));
  if (e.kind == TrainEvent::Kind::Checkpoint) statusBar()->showMessage("writing the checkpoint: " + QString::fromStdString(e.message), 5000);
  if (e.kind == TrainEvent::Kind::Evaluation && e.run_id == live_->shown_run() && !options_.screenshot.isEmpty() && !first_screenshot_taken_) {
    first_screenshot_taken_ = true;
    first_screenshot_pending_ = true;
  }
}

void MainWindow::on_ended(std::int64_t run, bool ok, const QString& message) {
  const std::int64_t sweep = worker_->sweep_id();
  worker_->wait();
  set_training_state(gui::LaunchForm::State::Idle);
  runs_->refresh();
  refresh_base_run_choices();  // a finished run may be one to build on
  const auto info = Session(options_.db.toStdString()).find_run(run);
  const QString status = info ? QString::fromStdString(to_string(info->status)) : QString("unknown");
  live_->refresh_decile_overlay_choices();
  live_->set_label(QString("Run %1 %2").arg(run).arg(status));
  statusBar()->clearMessage();  // "writing the checkpoint …" may be the last thing it said; the Live tab says how the run ended
  live_->progress()->end_run(status);
  if (sweep > 0) {
    // The sweep's runs side by side in the Runs tab, ready to compare; a stopped sweep says how to go on.
    runs_->set_filter_text(QString("sweep-%1").arg(sweep));
    // ... and compared: the Compare view shows this sweep, not whatever was selected before it.
    runs_->view()->selectAll();
    if (const auto sweep_runs = runs_->selected_runs(); sweep_runs.size() >= 2) compare_->set_runs(Session(options_.db.toStdString()), sweep_runs);
    live_->set_label(QString("Sweep %1 %2 — its runs are listed in the Runs tab (filter sweep-%1)%3")
                            .arg(sweep)
                            .arg(ok ? (status == "stopped" ? QString("stopped") : QString("finished")) : QString("had failures"))
                            .arg(status == "stopped" ? QString(" — Training › Resume a sweep… continues it") : QString()));
  } else if (status == "stopped") {
    live_->set_label(live_->label() + kContinueHint);
  }
  if (!ok && !closing_) {
    // Said where the run is watched, not only in a dialog that goes away: the cause (a full disk, a file-size
    // limit, a NaN loss) stays on the Live tab until the next run starts.
    QString cause = message;
    if (const QString prefix = QString("run %1 failed: ").arg(run); cause.startsWith(prefix)) cause.remove(0, prefix.size());
    if (sweep == 0) live_->set_label(QString("Run %1 failed: %2").arg(run).arg(cause));
    if (options_.quit_when_done)
      std::fprintf(stderr, "xmc-workbench: training failed: %s\n", message.toLocal8Bit().constData());
    else
      QMessageBox::warning(this, "Training failed", message);
  }
  if (ok && run == live_->shown_run()) {
    search_->open_run(options_.db, run);
    labels_->set_run(options_.db, run);
    projector_->set_run(options_.db, run);
  }
  const bool completed = info && info->status == RunStatus::Completed;
  auto finish = [this, completed] {
    if (first_screenshot_pending_) {  // the run ended right after its first evaluation
      first_screenshot_pending_ = false;
      save_screenshot(screenshot_path("first-evaluation"));
    }
    if (!options_.screenshot.isEmpty()) save_screenshot(options_.screenshot);
    if (options_.quit_when_done) QApplication::exit(completed && !screenshot_failed_ ? 0 : 1);
  };
  if (!options_.screenshot.isEmpty() || options_.quit_when_done) QTimer::singleShot(300, this, finish);
}

void MainWindow::show_run(std::int64_t run) {
  try {
    Session session(options_.db.toStdString());
    const RunInfo info = session.get_run(run);
    const double last_epoch = live_->show_stored_run(session, info);
    if (!(worker_->running() && worker_->run_id() == run))  // the run bar speaks of the run shown
      live_->progress()->show_stored_run(planned_epochs(info, last_epoch), last_epoch, QString::fromStdString(to_string(info.status)));
    if (info.status == RunStatus::Completed || info.status == RunStatus::Stopped) {
      search_->open_run(options_.db, run);
      labels_->set_run(options_.db, run);
      projector_->set_run(options_.db, run);
    }
    if (info.status == RunStatus::Stopped) live_->set_label(live_->label() + kContinueHint);
    // A run another process is training: keep reloading it from the store while it is shown.
    const bool external = (info.status == RunStatus::Running || info.status == RunStatus::Paused) &&
                          !(worker_->running() && worker_->run_id() == run);
    if (external) follow_timer_->start(); else follow_timer_->stop();
    update_actions();
    tabs_->setCurrentIndex(1);
  } catch (const std::exception& e) {
    QMessageBox::warning(this, "Cannot show run", QString::fromUtf8(e.what()));
  }
}

void MainWindow::refresh_base_run_choices() {
  // IRENE's base run: the finished runs of this store it can build on with the form's dataset, checked as a
  // start checks them, so a wrong id is not the first thing the user learns of it.
  TrainConfig config;
  try {
    config = launch_->config();
  } catch (const std::exception&) {
    config.method = launch_->field_text("method").toStdString();
    config.dataset = launch_->dataset().toStdString();
  }
  std::vector<std::pair<std::int64_t, QString>> choices;
  try {
    for (const RunInfo& run : Session(options_.db.toStdString()).base_run_choices(config)) {
      const QString method = QString::fromStdString(config_value_or(*flat_run_config(run.config_json), "method"));
      choices.emplace_back(run.id, QString::fromStdString(run.name) + (method.isEmpty() ? QString() : " (" + method + ")"));
    }
  } catch (const std::exception&) {
    return;  // an unreadable store: the field keeps what it has; Start reports the store's error
  }
  launch_->set_base_run_choices(choices);
}

void MainWindow::show_collapse_state(double epoch, double score_spread, double score_mean) {
  if (epoch < 0) {  // the run shown has no evaluation (yet)
    if (collapse_warning_) collapse_warning_->hide();
    return;
  }
  // A collapse warning stays in the status bar (phase messages would hide a transient one) until an
  // evaluation of the shown run is healthy again.
  if (!collapse_warning_) {
    collapse_warning_ = new QLabel;
    collapse_warning_->setObjectName("collapse_warning");
    collapse_warning_->setStyleSheet("color: #b00020; font-weight: bold");
    statusBar()->addPermanentWidget(collapse_warning_);
  }
  collapse_warning_->setVisible(embeddings_collapsed(score_spread, score_mean));
  collapse_warning_->setText(QString("embeddings collapsed at epoch %1: score spread %2, mean cosine %3 — lower lr or change the loss")
                                 .arg(epoch, 0, 'f', 2)
                                 .arg(score_spread, 0, 'f', 4)
                                 .arg(score_mean, 0, 'f', 4));
}

QString MainWindow::screenshot_path(const QString& suffix) const {
  const QFileInfo info(options_.screenshot);
  return info.dir().filePath(info.completeBaseName() + "-" + suffix + "." + (info.suffix().isEmpty() ? "png" : info.suffix()));
}

bool MainWindow::save_screenshot(const QString& path) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  const bool ok = grab().save(path);
  if (!ok) {
    std::fprintf(stderr, "xmc-workbench: cannot save the screenshot to %s\n", path.toLocal8Bit().constData());
    screenshot_failed_ = true;
  }
  return ok;
}

void MainWindow::report_error(const QString& title, const QString& message) {
  failed_ = true;
  if (options_.quit_when_done) {  // scripted: no dialog nobody can click; the error goes to stderr
    std::fprintf(stderr, "xmc-workbench: %s: %s\n", title.toLocal8Bit().constData(), message.toLocal8Bit().constData());
    QTimer::singleShot(0, qApp, [] { QApplication::exit(2); });  // also when called before the event loop runs
    return;
  }
  QMessageBox::warning(this, title, message);
}

void MainWindow::set_training_state(gui::LaunchForm::State state) {
  launch_->set_state(state);
  if (live_) live_->progress()->set_paused(state == gui::LaunchForm::State::Paused);
  update_actions();
}

void MainWindow::update_actions() {
  const bool running = worker_->running();
  const bool paused = running && worker_->paused();
  start_action_->setEnabled(!running);
  pause_action_->setEnabled(running && !paused);
  resume_action_->setEnabled(paused);
  stop_action_->setEnabled(running);
  bool shown_stopped = false;
  if (!running && live_->shown_run() > 0) {
    try {
      const auto info = Session(options_.db.toStdString()).find_run(live_->shown_run());
      shown_stopped = info && info->status == RunStatus::Stopped;
    } catch (const std::exception&) {
    }
  }
  continue_action_->setEnabled(shown_stopped);
}

void MainWindow::stop_training() {
  if (!worker_->running()) return;
  worker_->stop();
  statusBar()->showMessage("stopping: the current step or evaluation finishes, then a checkpoint is written…");
}

void MainWindow::continue_shown_run() {
  if (worker_->running() || live_->shown_run() <= 0) return;
  try {
    const std::int64_t run = worker_->resume(live_->shown_run(), options_.db, launch_->processes());
    const Session session(options_.db.toStdString());
    const std::shared_ptr<const TrainConfig> config = readable_config(session.get_run(run));
    follow_timer_->stop();
    live_->progress()->begin_run(static_cast<double>(total_epochs(*config)));
    live_->set_label(QString("Run %1: %2 (resumed)").arg(run).arg(QString::fromStdString(session.get_run(run).name)));
    set_training_state(gui::LaunchForm::State::Running);
    tabs_->setCurrentIndex(1);
    runs_->refresh();
  } catch (const std::exception& e) {
    report_error("Cannot resume run " + QString::number(live_->shown_run()), QString::fromUtf8(e.what()));
  }
}

void MainWindow::reload_followed_run() {
  if (live_->shown_run() <= 0) return;
  try {
    Session session(options_.db.toStdString());
    const auto info = session.find_run(live_->shown_run());
    if (!info) {
      follow_timer_->stop();
      return;
    }
    const double epoch = live_->reload_stored_plots(session, live_->shown_run());
    // The bars follow the stored points too (they froze at the epoch the run was opened at).
    live_->progress()->show_followed_run(planned_epochs(*info, epoch), epoch, QString::fromStdString(to_string(info->status)));
    live_->set_label(QString("Run %1: %2 (%3, written by another process)")
                            .arg(live_->shown_run())
                            .arg(QString::fromStdString(info->name))
                            .arg(QString::fromStdString(to_string(info->status))));
    if (info->status != RunStatus::Running && info->status != RunStatus::Paused) {
      follow_timer_->stop();
      show_run(live_->shown_run());  // final state: search panel, labels
    }
  } catch (const std::exception& e) {
    statusBar()->showMessage("Cannot follow run " + QString::number(live_->shown_run()) + ": " + QString::fromUtf8(e.what()), 8000);
  }
}

void MainWindow::export_report(const QString& format) {
  if (live_->shown_run() <= 0) {
    QMessageBox::information(this, "Export", "Open or train a run first.");
    return;
  }
  QString error;
  bool ok = false;
  const std::filesystem::path db = options_.db.toStdString();
  if (format == "csv") {
    const QString dir = xmc::gui::existing_directory(this, "Folder for the CSV files");
    if (dir.isEmpty()) return;
    ok = gui::export_run_csv(db, live_->shown_run(), dir + QString("/run-%1-scalars.csv").arg(live_->shown_run()),
                             dir + QString("/run-%1-metrics.csv").arg(live_->shown_run()), &error);
  } else {
    const QString path = xmc::gui::save_file_name(this, "Export report", QString("run-%1.%2").arg(live_->shown_run()).arg(format),
                                                      format == "html" ? "HTML (*.html)" : "PDF (*.pdf)");
    if (path.isEmpty()) return;
    ok = format == "html" ? gui::export_run_report_html(db, live_->shown_run(), path, &error) : gui::export_run_report_pdf(db, live_->shown_run(), path, &error);
  }
  if (!ok) QMessageBox::warning(this, "Export failed", error);
  else statusBar()->showMessage("exported", 5000);
}

void MainWindow::export_current_plots() {
  const QString dir = xmc::gui::existing_directory(this, "Folder for the plot files");
  if (dir.isEmpty()) return;
  QString error;
  for (auto [plot, name] : {std::pair<QCustomPlot*, const char*>{live_->loss_plot(), "loss"}, {live_->metric_plot(), "metrics"},
                            {live_->decile_plot(), "deciles"}, {live_->tsne_plot(), "tsne"}})
    for (const char* ext : {"png", "svg", "pdf"})
      if (!gui::export_plot(plot, dir + "/" + name + "." + ext, 0, 0, &error)) {
        QMessageBox::warning(this, "Export failed", error);
        return;
      }
  statusBar()->showMessage("plots exported to " + dir, 5000);
}

void MainWindow::open_store() {
  const QString path = xmc::gui::open_file_name(this, "Run store", QFileInfo(options_.db).path(), "SQLite (*.sqlite *.db);;All files (*)");
  if (path.isEmpty() || worker_->running()) return;
  options_.db = path;
  setWindowTitle("XMC Workbench — " + QFileInfo(path).fileName());
  auto* browser = new gui::RunsBrowser(path.toStdString());
  delete runs_tab_->replaceWidget(0, browser);
  runs_ = browser;
  runs_->set_follow(true);
  connect_runs_browser();
  // Nothing of the previous store stays on screen.
  follow_timer_->stop();
  live_->set_store(path);
  live_->clear("Run store " + path + ": open a run in the Runs tab.");
  compare_->set_runs(Session(options_.db.toStdString()), {});
  update_actions();
  statusBar()->showMessage("Run store: " + path);
}

int MainWindow::import_runs_from(const QString& path) {
  try {
    const ImportedRuns done = import_runs(options_.db.toStdString(), path.toStdString());
    runs_->refresh();
    statusBar()->showMessage(QString("%1 run(s) imported from %2%3")
                                 .arg(done.copied.size())
                                 .arg(path)
                                 .arg(done.already_here.empty() ? QString() : QString(", %1 already here").arg(done.already_here.size())),
                             8000);
    return static_cast<int>(done.copied.size());
  } catch (const std::exception& e) {
    report_error("Cannot import runs", QString::fromUtf8(e.what()));
    return -1;
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (worker_->running() && !options_.quit_when_done) {
    const auto answer = QMessageBox::question(this, "Training is running",
                                              "A run is training. Stop it (a checkpoint is written so it can be resumed) and quit?",
                                              QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
    if (answer != QMessageBox::Yes) {
      event->ignore();
      return;
    }
  }
  closing_ = true;
  QSettings settings;
  settings.setValue(kGeometrySetting, saveGeometry());
  settings.setValue(kRunsSplitSetting, runs_tab_->saveState());
  if (worker_->running()) {
    stop_training();
    statusBar()->repaint();
    worker_->wait();
  }
  event->accept();
}

}  // namespace xmc::app
