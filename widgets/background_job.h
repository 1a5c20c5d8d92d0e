#pragma once
// A computation of the engine (seconds to minutes: ranking a test set, a projection) run on Qt's thread
// pool, its result or error handed back on the UI thread — for views that must not block while it runs.
#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QtConcurrent/QtConcurrent>
#include <exception>
#include <functional>
#include <memory>

namespace xmc::gui {

/// Runs `work` on a pool thread; then, on `owner`'s thread and only while `owner` lives, `done` gets the
/// result (nullptr and the exception's text when `work` threw). Returns the job's future (to wait for it
/// before `owner` goes away, as `work` must not outlive what it reads).
template <class Result>
QFuture<void> run_in_background(QObject* owner, std::function<Result()> work,
                                std::function<void(std::unique_ptr<Result>, const QString& error)> done) {
  auto result = std::make_shared<std::unique_ptr<Result>>();
  auto error = std::make_shared<QString>();
  auto* watcher = new QFutureWatcher<void>(owner);
  QObject::connect(watcher, &QFutureWatcher<void>::finished, owner, [watcher, result, error, done] {
    watcher->deleteLater();
    done(std::move(*result), *error);
  });
  QFuture<void> job = QtConcurrent::run([work = std::move(work), result, error] {
    try {
      *result = std::make_unique<Result>(work());
    } catch (const std::exception& e) {
      *error = QString::fromUtf8(e.what());
    }
  });
  watcher->setFuture(job);
  return job;
}

}  // namespace xmc::gui
