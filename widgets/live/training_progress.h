#pragma once
// The Live tab's progress header for a training run, three bars each with its own ETA:
//  - run:   epochs done (fractional), with the time left for the whole run;
//  - steps: optimiser steps of the current epoch (tasks "epoch i/n", NGAME's "M1 epoch i/n" and "M4 epoch i/n");
//  - work:  everything between epochs — evaluation, clustering, hard-negative index building, encoding.
// Fed by the run's QtProgress (the task name picks the bar) and by its Step events (epoch position).
#include <QElapsedTimer>
#include <QString>
#include <QWidget>

class QLabel;
class QProgressBar;

namespace xmc::gui {

class TrainingProgress : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingProgress(QWidget* parent = nullptr);

  /// What the run bar counts: "epoch" for a method trained by gradient steps, "stage" for one that fits its stages
  /// (xrlinear: its rankers, then its rankers on every row); set before begin_run() or show_stored_run().
  void set_unit(const QString& unit) { unit_ = unit; }
  const QString& unit() const { return unit_; }
  /// A run starts (or resumes) with `total_epochs` epochs (M1 + M4 for NGAME) of which `done` are done.
  void begin_run(double total_epochs, double done = 0);
  /// The run ended: the bars stop and say how it ended ("completed", "stopped", "failed").
  void end_run(const QString& outcome);
  /// A stored run that is not training here: the run bar shows how far it got and how it ended.
  void show_stored_run(double total_epochs, double done, const QString& status);
  /// A run another process trains, as far as its stored points go: the Run bar at `epoch` (fractional) of
  /// `total_epochs`, the Epoch bar at the part of the current epoch done, the Other-work bar saying who trains it.
  void show_followed_run(double total_epochs, double epoch, const QString& status);
  /// Training is paused (or resumes): no ETA while paused, and the paused time is left out of the pace.
  void set_paused(bool paused);

  /// A progress report of the run's current task (QtProgress::progressed).
  void on_task(const QString& task, qint64 done, qint64 total, double eta_seconds);
  /// The current task finished (QtProgress::finished).
  void on_task_finished(const QString& task);
  /// The run's position after a step, in fractional epochs (TrainEvent::epoch).
  void on_epoch_position(double epoch);

  /// Whether `task` is a training epoch's steps (else it is work between epochs).
  static bool is_step_task(const QString& task);
  /// "ETA 1 h 02 min", "ETA 3 min 05 s", "ETA 12 s"; "" for an unknown (negative) time.
  static QString format_eta(double seconds);
  /// Shows `done` of `total` work units on `bar` (counts past INT_MAX clamped; total 0 = unknown
  /// length, a busy indicator). For every bar fed by a QtProgress.
  static void show_counts(QProgressBar* bar, qint64 done, qint64 total);
  /// show_counts() with the text "task — done/total  ETA …": a QtProgress::progressed() on a bar of its own.
  static void show_task(QProgressBar* bar, const QString& task, qint64 done, qint64 total, double eta_seconds);

  /// For tests and scripting: the text each bar shows and its ETA label.
  QString run_text() const;
  QString steps_text() const;
  QString work_text() const;
  QString run_eta() const;
  QString steps_eta() const;
  QString work_eta() const;

 private:
  void draw_position();

  QProgressBar* run_bar_ = nullptr;
  QProgressBar* steps_bar_ = nullptr;
  QProgressBar* work_bar_ = nullptr;
  QLabel* run_eta_ = nullptr;
  QLabel* steps_eta_ = nullptr;
  QLabel* work_eta_ = nullptr;
  double total_epochs_ = 0;
  QString unit_ = QStringLiteral("epoch");
  double first_position_ = -1;  ///< epoch position at the first step seen (run ETA excludes start-up)
  QElapsedTimer since_first_step_;
  qint64 paused_ms_ = 0;        ///< time spent paused since the first step, left out of the pace
  QElapsedTimer paused_since_;  ///< valid while paused
  double position_ = 0;         ///< the latest epoch position (drawn at most every kRedrawMs)
  QElapsedTimer since_redraw_;
};

}  // namespace xmc::gui
