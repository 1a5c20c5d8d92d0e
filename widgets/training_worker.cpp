#include "widgets/training_worker.h"

#include "engine/core/error.h"
#include "engine/session/session.h"

namespace xmc::gui {

TrainingWorker::TrainingWorker(QObject* parent) : QObject(parent), progress_(new QtProgress(this)) {
  qRegisterMetaType<xmc::TrainEvent>();
}

TrainingWorker::~TrainingWorker() {
  if (running()) stop();
  wait();
}

bool TrainingWorker::running() const { return thread_ != nullptr && thread_->isRunning(); }

std::int64_t TrainingWorker::start(const TrainConfig& config, const QString& db) {
  if (running()) throw Error("a run is already training; stop it first");
  auto run = std::make_unique<RunHandle>(Session(db.toStdString()).start_run(config));
  run_id_ = run->run_id();
  launch(std::move(run));
  return run_id_;
}

std::int64_t TrainingWorker::resume(std::int64_t run, const QString& db) {
  if (running()) throw Error("a run is already training; stop it first");
  auto training = std::make_unique<RunHandle>(Session(db.toStdString()).resume_run(run));
  run_id_ = run;
  launch(std::move(training));
  return run_id_;
}

void TrainingWorker::launch(std::unique_ptr<RunHandle> run) {
  wait();
  run_ = std::move(run);
  paused_ = false;
  progress_->reset();
  // Events are emitted from the training thread; Qt queues them to receivers on the UI thread.
  run_->subscribe([this](const TrainEvent& e) { Q_EMIT event(e); });
  RunHandle* training = run_.get();
  const std::int64_t id = run_id_;
  thread_ = QThread::create([this, training, id] {
    try {
      training->run(*progress_);
      Q_EMIT ended(id, true, QString());
    } catch (const std::exception& e) {
      Q_EMIT ended(id, false, QString::fromUtf8(e.what()));
    }
  });
  thread_->setObjectName("training");
  thread_->start();
}

void TrainingWorker::stop() {
  if (run_) run_->request_stop();
  progress_->cancel();
}

void TrainingWorker::set_paused(bool paused) {
  paused_ = paused;
  if (run_) run_->set_paused(paused);
}

void TrainingWorker::wait() {
  if (thread_ != nullptr) {
    thread_->wait();
    delete thread_;
    thread_ = nullptr;
  }
}

}  // namespace xmc::gui
