#include "widgets/live/training_progress.h"

#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QRegularExpression>
#include <algorithm>
#include <climits>
#include <cmath>

namespace xmc::gui {
namespace {

constexpr int kRunScale = 1000;  ///< run bar units per epoch (QProgressBar counts in ints)

QProgressBar* make_bar(const QString& tooltip) {
  auto* bar = new QProgressBar;
  bar->setTextVisible(true);
  bar->setToolTip(tooltip);
  bar->setMinimumWidth(260);
  bar->setRange(0, 1);
  bar->setValue(0);
  return bar;
}

QLabel* make_eta_label() {
  auto* label = new QLabel;
  label->setMinimumWidth(120);
  return label;
}

}  // namespace

TrainingProgress::TrainingProgress(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setVerticalSpacing(2);
  run_bar_ = make_bar("Epochs of the whole run done so far; the ETA is for the whole run, from the pace since its first step");
  steps_bar_ = make_bar("Optimiser steps of the current epoch");
  work_bar_ = make_bar("Work between epochs: evaluation, clustering of training queries, hard-negative index building");
  run_eta_ = make_eta_label();
  steps_eta_ = make_eta_label();
  work_eta_ = make_eta_label();
  const QString names[] = {"Run", "Epoch", "Other work"};
  QProgressBar* bars[] = {run_bar_, steps_bar_, work_bar_};
  QLabel* etas[] = {run_eta_, steps_eta_, work_eta_};
  for (int row = 0; row < 3; ++row) {
    grid->addWidget(new QLabel(names[row]), row, 0);
    grid->addWidget(bars[row], row, 1);
    grid->addWidget(etas[row], row, 2);
  }
  grid->setColumnStretch(1, 1);
  run_bar_->setFormat("no run");
  steps_bar_->setFormat("—");
  work_bar_->setFormat("—");
}

void TrainingProgress::begin_run(double total_epochs, double done) {
  total_epochs_ = total_epochs;
  first_position_ = -1;
  run_bar_->setRange(0, std::max(1, static_cast<int>(std::lround(total_epochs * kRunScale))));
  steps_bar_->setRange(0, 1);
  steps_bar_->setValue(0);
  steps_bar_->setFormat("waiting for the first " + unit_);
  work_bar_->setRange(0, 1);
  work_bar_->setValue(0);
  work_bar_->setFormat("—");
  for (auto* label : {run_eta_, steps_eta_, work_eta_}) label->clear();
  since_redraw_.invalidate();
  paused_ms_ = 0;
  paused_since_.invalidate();
  on_epoch_position(done);
  first_position_ = -1;  // the pace is measured from the first step of this session, not from `done`
}

void TrainingProgress::end_run(const QString& outcome) {
  if (total_epochs_ > 0) run_bar_->setValue(static_cast<int>(std::lround(position_ * kRunScale)));  // the last, maybe undrawn, step
  run_bar_->setFormat(QString("run %1 — %2 %3 of %4").arg(outcome, unit_).arg(run_bar_->value() / double(kRunScale), 0, 'f', 2).arg(total_epochs_));
  for (auto* label : {run_eta_, steps_eta_, work_eta_}) label->clear();
  if (steps_bar_->maximum() == 0) steps_bar_->setRange(0, 1);  // a busy indicator stops
  if (work_bar_->maximum() == 0) work_bar_->setRange(0, 1);
}

void TrainingProgress::show_stored_run(double total_epochs, double done, const QString& status) {
  total_epochs_ = total_epochs;
  position_ = std::clamp(done, 0.0, std::max(total_epochs, 0.0));
  run_bar_->setRange(0, std::max(1, static_cast<int>(std::lround(total_epochs * kRunScale))));
  paused_since_.invalidate();
  end_run(status);
  steps_bar_->setValue(0);
  steps_bar_->setFormat("—");
  work_bar_->setValue(0);
  work_bar_->setFormat("—");
}

void TrainingProgress::show_followed_run(double total_epochs, double epoch, const QString& status) {
  total_epochs_ = total_epochs;
  position_ = std::clamp(epoch, 0.0, std::max(total_epochs, 0.0));
  run_bar_->setRange(0, std::max(1, static_cast<int>(std::lround(total_epochs * kRunScale))));
  run_bar_->setValue(static_cast<int>(std::lround(position_ * kRunScale)));
  run_bar_->setFormat(QString("%1 — %2 %3 of %4").arg(status, unit_).arg(position_, 0, 'f', 2).arg(total_epochs_));
  // Within the current epoch: epoch 4.37 is 37 % into the 5th.
  const double whole = std::floor(position_);
  const bool at_end = total_epochs > 0 && position_ >= total_epochs;
  const int current = static_cast<int>(at_end ? whole : whole + 1);
  const double part = at_end ? 1.0 : position_ - whole;
  steps_bar_->setRange(0, 100);
  steps_bar_->setValue(static_cast<int>(std::lround(part * 100)));
  steps_bar_->setFormat(QString("%1 %2/%3 — %4 %").arg(unit_).arg(current).arg(total_epochs_).arg(static_cast<int>(std::lround(part * 100))));
  work_bar_->setRange(0, 1);
  work_bar_->setValue(0);
  work_bar_->setFormat("trained by another process: its stored steps and evaluations, every 2 s");
  for (auto* label : {run_eta_, steps_eta_, work_eta_}) label->clear();
}

void TrainingProgress::set_paused(bool paused) {
  if (paused == paused_since_.isValid()) return;
  if (paused) {
    paused_since_.start();
    for (auto* label : {run_eta_, steps_eta_, work_eta_}) label->clear();
    run_bar_->setFormat(QString("paused — %1 %2 of %3").arg(unit_).arg(position_, 0, 'f', 2).arg(total_epochs_));
    return;
  }
  if (first_position_ >= 0) paused_ms_ += paused_since_.elapsed();  // the pace clock was running meanwhile
  paused_since_.invalidate();
  draw_position();
}

void TrainingProgress::on_epoch_position(double epoch) {
  if (total_epochs_ <= 0) return;
  position_ = std::clamp(epoch, 0.0, total_epochs_);
  // Steps come dozens of times a second; redrawing the bar and ETA at each took ~5 % of a 2-core
  // machine's training throughput. A few redraws a second read the same.
  constexpr qint64 kRedrawMs = 250;
  if (first_position_ >= 0 && since_redraw_.isValid() && since_redraw_.elapsed() < kRedrawMs) return;
  since_redraw_.start();
  draw_position();
}

void TrainingProgress::draw_position() {
  const double position = position_;
  run_bar_->setValue(static_cast<int>(std::lround(position * kRunScale)));
  const bool paused = paused_since_.isValid();
  run_bar_->setFormat(QString(paused ? "paused — %1 %2 of %3" : "%1 %2 of %3").arg(unit_).arg(position, 0, 'f', 2).arg(total_epochs_));
  if (first_position_ < 0) {
    first_position_ = position;
    since_first_step_.start();
    return;
  }
  if (paused) return;  // a step that finished as the pause began: no ETA while paused
  const double covered = position - first_position_;
  const double seconds = static_cast<double>(since_first_step_.elapsed() - paused_ms_) / 1000.0;
  // Pace over everything since the first step (evaluations included), so the estimate covers them too.
  run_eta_->setText(covered > 0 && seconds > 1 ? format_eta(seconds * (total_epochs_ - position) / covered) : QString());
}

void TrainingProgress::on_task(const QString& task, qint64 done, qint64 total, double eta_seconds) {
  const bool steps = is_step_task(task);
  QProgressBar* bar = steps ? steps_bar_ : work_bar_;
  QLabel* eta = steps ? steps_eta_ : work_eta_;
  show_counts(bar, done, total);
  bar->setFormat(task + (total > 0 ? QString(" — %v/%m") : QString()));
  eta->setText(paused_since_.isValid() ? QString() : format_eta(eta_seconds));
}

void TrainingProgress::on_task_finished(const QString& task) {
  if (is_step_task(task)) {
    steps_eta_->clear();
    return;
  }
  work_bar_->setRange(0, 1);
  work_bar_->setValue(1);
  work_bar_->setFormat("done: " + task);
  work_eta_->clear();
}

void TrainingProgress::show_counts(QProgressBar* bar, qint64 done, qint64 total) {
  bar->setRange(0, total > 0 ? static_cast<int>(std::min<qint64>(total, INT_MAX)) : 0);
  bar->setValue(static_cast<int>(std::min<qint64>(done, INT_MAX)));
}

void TrainingProgress::show_task(QProgressBar* bar, const QString& task, qint64 done, qint64 total, double eta_seconds) {
  show_counts(bar, done, total);
  bar->setFormat(task + " — %v/%m" + (eta_seconds >= 0 ? "  " + format_eta(eta_seconds) : QString()));
}

bool TrainingProgress::is_step_task(const QString& task) {
  // The trainer names each stage's epochs "<stage label> i/n": "epoch 2/5", NGAME's "M1 epoch 1/5".
  static const QRegularExpression epoch_task(QStringLiteral("^(.+ )?epoch \\d+/\\d+$"));
  return epoch_task.match(task).hasMatch();
}

QString TrainingProgress::format_eta(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return {};
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600) return QString("ETA %1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QChar('0'));
  if (s >= 60) return QString("ETA %1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
  return QString("ETA %1 s").arg(s);
}

QString TrainingProgress::run_text() const { return run_bar_->text(); }
QString TrainingProgress::steps_text() const { return steps_bar_->text(); }
QString TrainingProgress::work_text() const { return work_bar_->text(); }
QString TrainingProgress::run_eta() const { return run_eta_->text(); }
QString TrainingProgress::steps_eta() const { return steps_eta_->text(); }
QString TrainingProgress::work_eta() const { return work_eta_->text(); }

}  // namespace xmc::gui
