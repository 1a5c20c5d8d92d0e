#include "widgets/live/training_worker.h"

#include <QCoreApplication>

#include "engine/core/error.h"
#include "engine/session/session.h"
#include "engine/session/sweep_runner.h"

namespace xmc::gui {

TrainingWorker::TrainingWorker(QObject* parent) : QObject(parent), progress_(new QtProgress(this)) {
  qRegisterMetaType<xmc::TrainEvent>();
  delivery_timer_.setInterval(100);
  connect(&delivery_timer_, &QTimer::timeout, this, &TrainingWorker::deliver_events);
}

TrainingWorker::~TrainingWorker() {
  if (running()) stop();
  wait();
}

bool TrainingWorker::running() const { return thread_ != nullptr && thread_->isRunning(); }

namespace {

TrainingProcesses local_processes(int processes, const QString& worker_binary) {
  TrainingProcesses p;
  p.local = processes;
  p.worker_binary = (worker_binary.isEmpty() ? QCoreApplication::applicationDirPath() + "/xmc" : worker_binary).toStdString();
  return p;
}

}  // namespace

std::int64_t TrainingWorker::start(const TrainConfig& config, const QString& db, int processes) {
  if (running()) throw Error("a run is already training; stop it first");
  auto run = std::make_unique<RunHandle>(Session(db.toStdString()).start_run(config, local_processes(processes, worker_binary_)));
  processes_ = processes;
  run_id_ = run->run_id();
  launch(std::move(run));
  return run_id_;
}

std::int64_t TrainingWorker::resume(std::int64_t run, const QString& db, int processes) {
  if (running()) throw Error("a run is already training; stop it first");
  auto training = std::make_unique<RunHandle>(Session(db.toStdString()).resume_run(run, {}, local_processes(processes, worker_binary_)));
  processes_ = processes;
  run_id_ = run;
  launch(std::move(training));
  return run_id_;
}

void TrainingWorker::start_sweep(std::int64_t sweep, const QString& db) {
  if (running()) throw Error("a run is already training; stop it first");
  const std::int64_t points = static_cast<std::int64_t>(Session(db.toStdString()).get_sweep(sweep).points.size());  // throws for a wrong id
  wait();
  run_.reset();
  sweep_ = std::make_unique<SweepRunner>(db.toStdString(), sweep, 1);
  sweep_id_ = sweep;
  run_id_ = 0;
  paused_ = false;
  progress_->reset();
  sweep_->on_start([this, sweep, points](std::int64_t position, std::int64_t run) {
    run_id_ = run;
    progress_->reset();
    // Through the same queue as the run's events, so the UI resets its plots before this run's first step.
    {
      std::lock_guard lock(pending_mutex_);
      pending_.emplace_back(PointStart{sweep, position, points, run});
    }
    QMetaObject::invokeMethod(this, &TrainingWorker::deliver_events, Qt::QueuedConnection);
  });
  sweep_->on_event([this](std::int64_t, std::int64_t, const TrainEvent& e) { queue_event(e); });
  delivery_timer_.start();
  SweepRunner* runner = sweep_.get();
  thread_ = QThread::create([this, runner] {
    try {
      const SweepRunner::Outcome outcome = runner->run(*progress_);
      QMetaObject::invokeMethod(this, &TrainingWorker::deliver_events, Qt::QueuedConnection);
      QStringList errors;
      for (const auto& e : outcome.errors) errors << QString::fromStdString(e);
      Q_EMIT ended(run_id_.load(), outcome.failed == 0, errors.join(QLatin1Char('\n')));
    } catch (const std::exception& e) {
      QMetaObject::invokeMethod(this, &TrainingWorker::deliver_events, Qt::QueuedConnection);
      Q_EMIT ended(run_id_.load(), false, QString::fromUtf8(e.what()));
    }
  });
  thread_->setObjectName("sweep");
  thread_->start();
}

void TrainingWorker::launch(std::unique_ptr<RunHandle> run) {
  wait();
  sweep_.reset();
  sweep_id_ = 0;
  run_ = std::move(run);
  paused_ = false;
  progress_->reset();
  run_->subscribe([this](const TrainEvent& e) { queue_event(e); });
  delivery_timer_.start();
  RunHandle* training = run_.get();
  const std::int64_t id = run_id_;
  thread_ = QThread::create([this, training, id] {
    // The last events reach the UI thread before `ended` does: queued calls run in order.
    try {
      training->run(*progress_);
      QMetaObject::invokeMethod(this, &TrainingWorker::deliver_events, Qt::QueuedConnection);
      Q_EMIT ended(id, true, QString());
    } catch (const std::exception& e) {
      QMetaObject::invokeMethod(this, &TrainingWorker::deliver_events, Qt::QueuedConnection);
      Q_EMIT ended(id, false, QString::fromUtf8(e.what()));
    }
  });
  thread_->setObjectName("training");
  thread_->start();
}

void TrainingWorker::queue_event(const TrainEvent& e) {
  std::lock_guard lock(pending_mutex_);
  pending_.push_back(e);
  if (e.kind != TrainEvent::Kind::Step && pending_.size() == 1)  // else a delivery is already on its way or due
    QMetaObject::invokeMethod(this, &TrainingWorker::deliver_events, Qt::QueuedConnection);
}

void TrainingWorker::deliver_events() {
  std::vector<std::variant<TrainEvent, PointStart>> events;
  {
    std::lock_guard lock(pending_mutex_);
    events.swap(pending_);
  }
  for (const auto& item : events) {
    if (const auto* start = std::get_if<PointStart>(&item))
      Q_EMIT point_started(start->sweep, start->position, start->points, start->run);
    else
      Q_EMIT event(std::get<TrainEvent>(item));
  }
  if (!running()) delivery_timer_.stop();
}

void TrainingWorker::stop() {
  if (run_) run_->request_stop();
  if (sweep_) sweep_->request_stop();
  progress_->cancel();
}

void TrainingWorker::set_paused(bool paused) {
  paused_ = paused;
  if (run_) run_->set_paused(paused);
  if (sweep_) sweep_->set_paused(paused);
}

void TrainingWorker::wait() {
  if (thread_ != nullptr) {
    thread_->wait();
    delete thread_;
    thread_ = nullptr;
  }
}

}  // namespace xmc::gui
