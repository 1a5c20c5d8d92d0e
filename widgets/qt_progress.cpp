#include "widgets/qt_progress.h"

namespace xmc::gui {

using Clock = std::chrono::steady_clock;

void QtProgress::start(std::string_view task, std::int64_t total) {
  task_ = QString::fromUtf8(task.data(), static_cast<qsizetype>(task.size()));
  total_ = total;
  started_ = last_emit_ = Clock::now();
  Q_EMIT progressed(task_, 0, total_, -1);
}

void QtProgress::update(std::int64_t done) {
  const auto now = Clock::now();
  if (now - last_emit_ < std::chrono::milliseconds(100) && done < total_) return;  // at most 10 updates/s
  last_emit_ = now;
  const double elapsed = std::chrono::duration<double>(now - started_).count();
  const double eta = (total_ > 0 && done > 0) ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : -1;
  Q_EMIT progressed(task_, done, total_, eta);
}

void QtProgress::finish() { Q_EMIT finished(task_); }

}  // namespace xmc::gui
