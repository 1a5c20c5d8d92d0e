#pragma once
// Runs a training run (the Session's RunHandle) on its own thread so the UI never blocks; the run's events arrive as queued
// Qt signals on the UI thread. Stop and pause are forwarded to the engine (thread-safe there).
#include <QObject>
#include <QString>
#include <QThread>
#include <memory>

#include "engine/train/train_config.h"
#include "engine/train/train_events.h"
#include "widgets/qt_progress.h"

Q_DECLARE_METATYPE(xmc::TrainEvent)

namespace xmc {
class RunHandle;
}

namespace xmc::gui {

class TrainingWorker : public QObject {
  Q_OBJECT
 public:
  explicit TrainingWorker(QObject* parent = nullptr);
  ~TrainingWorker() override;  ///< stops a running run (with a checkpoint) and waits for it

  /// Records a new run in the store at `db` and starts training it; returns the run id. Throws
  /// xmc::Error (ConfigError naming the key) when the config is invalid; nothing starts then.
  std::int64_t start(const TrainConfig& config, const QString& db);
  /// Continues a stopped or failed run from its checkpoint.
  std::int64_t resume(std::int64_t run, const QString& db);

  bool running() const;
  std::int64_t run_id() const { return run_id_; }
  QtProgress* progress() { return progress_; }

  void stop();                 ///< the run writes a checkpoint and ends with status "stopped"
  void set_paused(bool paused);
  bool paused() const { return paused_; }
  /// Blocks until the training thread has ended (used when quitting).
  void wait();

 Q_SIGNALS:
  void event(const xmc::TrainEvent& event);
  /// The thread ended: completed / stopped (ok = true) or failed (ok = false, message = error).
  void ended(std::int64_t run, bool ok, const QString& message);

 private:
  void launch(std::unique_ptr<RunHandle> run);

  std::unique_ptr<RunHandle> run_;
  QThread* thread_ = nullptr;
  QtProgress* progress_;
  std::int64_t run_id_ = 0;
  bool paused_ = false;
};

}  // namespace xmc::gui
