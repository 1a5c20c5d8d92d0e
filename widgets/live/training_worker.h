#pragma once
// Runs a training run (the Session's RunHandle) on its own thread so the UI never blocks; the run's events arrive as
// Qt signals on the UI thread, in order: steps in batches every 100 ms (they come dozens of times a second, and one
// cross-thread wake-up each cost a 2-core machine ~5 % of its training throughput), anything else at once. Stop and
// pause are forwarded to the engine (thread-safe there).
#include <QObject>
#include <QString>
#include <QThread>
#include <QTimer>
#include <atomic>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

#include "engine/config/train_config.h"
#include "engine/records/train_events.h"
#include "widgets/qt_progress.h"

Q_DECLARE_METATYPE(xmc::TrainEvent)

namespace xmc {
class RunHandle;
class SweepRunner;
}

namespace xmc::gui {

class TrainingWorker : public QObject {
  Q_OBJECT
 public:
  explicit TrainingWorker(QObject* parent = nullptr);
  ~TrainingWorker() override;  ///< stops a running run (with a checkpoint) and waits for it

  /// Records a new run in the store at `db` and starts training it; returns the run id. Throws
  /// xmc::Error (ConfigError naming the key) when the config is invalid; nothing starts then.
  /// `processes` > 1: a data-parallel job of that many processes on this machine (this one is rank 0; the
  /// others run the xmc binary, see set_worker_binary()).
  std::int64_t start(const TrainConfig& config, const QString& db, int processes = 1);
  /// Continues a stopped or failed run from its checkpoint (with `processes` processes).
  std::int64_t resume(std::int64_t run, const QString& db, int processes = 1);
  /// The xmc binary that a multi-process run's other processes run (default: the one beside this program).
  void set_worker_binary(const QString& path) { worker_binary_ = path; }
  /// Trains sweep `sweep` of the store at `db` point after point (completed points are skipped, stopped
  /// ones resume): point_started() announces each point's run, whose events then arrive as a run's do;
  /// ended() comes once, after the last point (ok = no point failed). Stop and pause act on the sweep.
  void start_sweep(std::int64_t sweep, const QString& db);
  /// The sweep being trained (0 = a single run).
  std::int64_t sweep_id() const { return sweep_id_; }

  bool running() const;
  std::int64_t run_id() const { return run_id_; }
  QtProgress* progress() { return progress_; }

  void stop();                 ///< the run writes a checkpoint and ends with status "stopped"
  void set_paused(bool paused);
  bool paused() const { return paused_; }
  /// The processes of the run being trained (1 = this one alone).
  int processes() const { return processes_; }
  /// Blocks until the training thread has ended (used when quitting).
  void wait();

 Q_SIGNALS:
  void event(const xmc::TrainEvent& event);
  /// The thread ended: completed / stopped (ok = true) or failed (ok = false, message = error).
  void ended(std::int64_t run, bool ok, const QString& message);
  /// A sweep's point starts training in run `run` (position 0-based, of `points`).
  void point_started(std::int64_t sweep, std::int64_t position, std::int64_t points, std::int64_t run);

 private:
  void launch(std::unique_ptr<RunHandle> run);
  /// Training thread: queues `e` for the UI thread.
  void queue_event(const TrainEvent& e);
  /// UI thread: emits every queued event, in order.
  void deliver_events();

  std::unique_ptr<RunHandle> run_;
  std::unique_ptr<SweepRunner> sweep_;
  std::int64_t sweep_id_ = 0;
  QThread* thread_ = nullptr;
  QtProgress* progress_;
  std::atomic<std::int64_t> run_id_{0};
  bool paused_ = false;
  /// A sweep's point starting, delivered in order with the events (the UI resets before its first step).
  struct PointStart {
    std::int64_t sweep = 0, position = 0, points = 0, run = 0;
  };
  std::mutex pending_mutex_;
  std::vector<std::variant<TrainEvent, PointStart>> pending_;  ///< not yet emitted on the UI thread
  QTimer delivery_timer_;            ///< delivers queued steps while a run trains
  QString worker_binary_;
  int processes_ = 1;
};

}  // namespace xmc::gui
