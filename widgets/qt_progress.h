#pragma once
// xmc::Progress for the GUI: engine work running on a worker thread reports through Qt signals (queued
// to the UI thread), and a Cancel button reaches the engine through cancelled().
#include <QObject>
#include <QString>
#include <atomic>
#include <chrono>

#include "engine/core/progress.h"

namespace xmc::gui {

class QtProgress : public QObject, public Progress {
  Q_OBJECT
 public:
  explicit QtProgress(QObject* parent = nullptr) : QObject(parent) {}

  void start(std::string_view task, std::int64_t total) override;
  void update(std::int64_t done) override;
  void finish() override;
  bool cancelled() const override { return cancel_.load(); }

  /// Thread-safe: ask the running task to stop.
  void cancel() { cancel_.store(true); }
  void reset() { cancel_.store(false); }

 Q_SIGNALS:
  /// task: what runs; done/total: units (total 0 = unknown); eta_seconds < 0 when unknown.
  void progressed(const QString& task, qint64 done, qint64 total, double eta_seconds);
  void finished(const QString& task);

 private:
  QString task_;
  std::int64_t total_ = 0;
  std::chrono::steady_clock::time_point started_, last_emit_;
  std::atomic<bool> cancel_{false};
};

}  // namespace xmc::gui
