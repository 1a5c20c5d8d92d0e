#pragma once
// The workbench window: wires the launch form, live plots, search panel and run browser to the engine
// facade (xmc::Session: runs, training via TrainingWorker, predictors). Holds no training or scoring logic.
#include <QFuture>
#include <QMainWindow>
#include <QString>
#include <functional>
#include <optional>

#include "engine/core/progress.h"

#include "engine/records/run_records.h"
#include "engine/config/sweep_grid.h"
#include "engine/records/train_events.h"
#include "widgets/live/launch_form.h"

class QAction;
class QComboBox;
class QTimer;
class QLabel;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTabWidget;

namespace xmc {
class Session;
struct SyntheticBuildOptions;
}

namespace xmc::gui {
class CompareView;
class DecilePlot;
class LaunchForm;
class LiveView;
class QtProgress;
class LossPlot;
class MetricPlot;
class EvaluationView;
class RunsBrowser;
class SearchPanel;
class LabelQualityView;
class ProjectorView;
class TrainingWorker;
class TrainingProgress;
class TsnePlot;
}  // namespace xmc::gui

namespace xmc::app {

struct WorkbenchOptions {
  QString db;                 ///< run store
  QString dataset;            ///< dataset folder to preselect
  QString config;             ///< config file to load into the form
  QString presets_dir;        ///< folder of preset configs
  bool autostart = false;     ///< start training right away
  QString screenshot;         ///< save the window after the first evaluation and when training ends
  bool quit_when_done = false;
  int processes = 1;          ///< processes of a run started here (the Launch tab's box)
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(WorkbenchOptions options, QWidget* parent = nullptr);
  ~MainWindow() override;

  void start_training();
  /// Records a sweep of the launch form's config over `axes` and trains it point after point, the Live
  /// tab following each point's run; returns the sweep id (0 when it could not start: the error is shown).
  std::int64_t start_sweep(const std::vector<SweepAxis>& axes, const QString& name = {});
  /// Continues a sweep: completed points stay, stopped or failed ones resume, the rest start.
  void resume_sweep(std::int64_t sweep);
  /// Shows a stored run: its curves, deciles, t-SNE in the Live tab, and loads it into the search panel.
  void show_run(std::int64_t run);
  /// Builds a WordNet dataset of `items` synsets into `out` in the background (Datasets menu).
  void start_wordnet_build(const QString& out, int items);
  /// Builds a synthetic dataset into `out` in the background, as the Datasets menu does after its dialog.
  void start_synthetic_build(const QString& out, const SyntheticBuildOptions& options);
  /// Copies the runs of the store at `path` that this store does not have yet into it (File › Import runs…):
  /// the number copied, or -1 when the store was refused (the error is shown).
  int import_runs_from(const QString& path);
  /// Saves the whole window as a PNG; returns false on failure.
  bool save_screenshot(const QString& path);

 Q_SIGNALS:
  /// A dataset build or import finished and was selected in the launch form.
  void dataset_ready(const QString& folder);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void on_event(const xmc::TrainEvent& e);
  /// A dialog, or with --quit-when-done the message on stderr and exit code 2 (no dialog to hang on).
  void report_error(const QString& title, const QString& message);
  /// Launch form buttons and Training menu actions for the worker's state.
  void set_training_state(gui::LaunchForm::State state);
  void update_actions();
  void stop_training();
  /// Resumes the shown run (stopped) from its checkpoint on the worker.
  void continue_shown_run();
  /// Reloads the shown run from the store (it is being trained by another process).
  void reload_followed_run();
  void on_ended(std::int64_t run, bool ok, const QString& message);
  /// A sweep's point starts: the Live tab turns to its run.
  void on_point_started(std::int64_t sweep, std::int64_t position, std::int64_t points, std::int64_t run);
  void open_sweep_dialog();
  /// The status bar's warning when an evaluation found the embeddings collapsed (hidden when healthy, or for
  /// epoch < 0: the run shown has no evaluation).
  void show_collapse_state(double epoch, double score_spread, double score_mean);
  void choose_sweep_to_resume();
  void export_report(const QString& format);
  void export_current_plots();
  void open_store();
  /// Runs `job` (a dataset build or import writing to `out`) on a worker thread with progress and Cancel.
  void run_dataset_job(const QString& title, const QString& out, std::function<void(Progress&)> job);
  void build_wordnet_dataset();
  void build_synthetic_dataset();
  void import_mulan_dataset();
  void connect_runs_browser();
  QString screenshot_path(const QString& suffix) const;
  void build_menus();
  /// The Runs tab: the runs table above the comparison of the runs chosen in it.
  QSplitter* build_runs_tab();
  /// `text` searched in the Search tab (once its run is loaded).
  void search_for(const QString& text);
  /// The status bar's progress and Cancel of background dataset jobs.
  void build_job_status();
  void refresh_base_run_choices();

  WorkbenchOptions options_;
  gui::TrainingWorker* worker_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  gui::LaunchForm* launch_ = nullptr;
  gui::LiveView* live_ = nullptr;
  gui::SearchPanel* search_ = nullptr;
  gui::LabelQualityView* labels_ = nullptr;
  gui::ProjectorView* projector_ = nullptr;
  gui::RunsBrowser* runs_ = nullptr;
  gui::CompareView* compare_ = nullptr;
  QSplitter* runs_tab_ = nullptr;
  QProgressBar* job_progress_ = nullptr;
  QPushButton* job_cancel_ = nullptr;
  gui::QtProgress* job_reporter_ = nullptr;
  QFuture<QString> dataset_job_;  ///< the dataset build or import in flight, if any
  QLabel* collapse_warning_ = nullptr;  ///< in the status bar while the shown run's embeddings have collapsed
  bool first_screenshot_taken_ = false;
  bool first_screenshot_pending_ = false;  ///< taken at the next event after the first evaluation
  bool screenshot_failed_ = false;
  bool failed_ = false;                    ///< an error was reported (no autostart after it)
  QTimer* follow_timer_ = nullptr;
  QAction* start_action_ = nullptr;
  QAction* pause_action_ = nullptr;
  QAction* resume_action_ = nullptr;
  QAction* stop_action_ = nullptr;
  QAction* continue_action_ = nullptr;
  bool closing_ = false;
};

}  // namespace xmc::app
