#include "engine/session/sweep_runner.h"

#include <algorithm>
#include <thread>

#include "engine/core/error.h"
#include "engine/session/run_handle.h"
#include "engine/session/session.h"

namespace xmc {

SweepRunner::SweepRunner(std::filesystem::path db_path, std::int64_t sweep, int parallel)
    : db_path_(std::move(db_path)), sweep_(sweep), parallel_(std::max(1, parallel)) {}

SweepRunner::~SweepRunner() = default;

void SweepRunner::request_stop() {
  stop_.store(true);
  std::lock_guard lock(mutex_);
  for (RunHandle* run : active_) run->request_stop();
}

void SweepRunner::set_paused(bool paused) {
  std::lock_guard lock(mutex_);
  paused_ = paused;
  for (RunHandle* run : active_) run->set_paused(paused);
}

SweepRunner::Outcome SweepRunner::run(Progress& progress) {
  const SweepInfo sweep = Session(db_path_).get_sweep(sweep_);  // a missing sweep fails before any thread
  Outcome outcome;
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < sweep.points.size(); i = next++) {
      if (stop_.load()) {
        std::lock_guard lock(mutex_);
        ++outcome.stopped;
        continue;
      }
      train_point(i, parallel_ == 1 ? progress : silent_progress(), outcome);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(parallel_, static_cast<int>(sweep.points.size())); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return outcome;
}

void SweepRunner::train_point(std::size_t index, Progress& progress, Outcome& outcome) {
  Session session(db_path_);
  // Read again at each point: another runner of the same sweep (the workbench and `xmc sweep --resume`)
  // may have started this point's run meanwhile.
  const SweepInfo sweep = session.get_sweep(sweep_);
  const SweepPoint& point = sweep.points[index];
  std::string values;
  for (const auto& a : point.assignments) values += (values.empty() ? "" : ", ") + a;
  const std::string where = "point " + std::to_string(point.position) + " (" + values + ")";
  auto fail = [&](const std::string& message) {
    std::lock_guard lock(mutex_);
    ++outcome.failed;
    outcome.errors.push_back(where + ": " + message);
  };
  try {
    const std::optional<RunInfo> existing = point.run > 0 ? session.find_run(point.run) : std::nullopt;
    if (existing && existing->status == RunStatus::Completed) {
      std::lock_guard lock(mutex_);
      ++outcome.completed;
      return;
    }
    std::unique_ptr<RunHandle> handle;
    if (existing) {
      handle = std::make_unique<RunHandle>(session.resume_run(existing->id));  // stopped, failed or never started
    } else {
      TrainConfig config = Session::sweep_point_config(sweep, point);
      // Points side by side share the machine's cores rather than each taking all of them.
      if (parallel_ > 1 && config.threads == 0)
        config.threads = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::thread::hardware_concurrency()) / parallel_);
      handle = std::make_unique<RunHandle>(session.start_run(std::move(config)));
      session.add_run_tags(handle->run_id(), {"sweep-" + std::to_string(sweep_)});
      session.set_sweep_point_run(sweep_, point.position, handle->run_id());
    }
    const std::int64_t run = handle->run_id();
    if (on_start_) {
      std::lock_guard lock(mutex_);
      on_start_(point.position, run);
    }
    handle->subscribe([this, position = point.position, run](const TrainEvent& e) {
      if (!on_event_) return;
      std::lock_guard lock(mutex_);
      on_event_(position, run, e);
    });
    {
      std::lock_guard lock(mutex_);
      if (stop_.load()) {  // stopped while this point was being set up
        ++outcome.stopped;
        return;
      }
      active_.push_back(handle.get());
      if (paused_) handle->set_paused(true);
    }
    TrainResult result;
    try {
      result = handle->run(progress);
    } catch (...) {
      std::lock_guard lock(mutex_);
      active_.erase(std::find(active_.begin(), active_.end(), handle.get()));
      throw;
    }
    std::lock_guard lock(mutex_);
    active_.erase(std::find(active_.begin(), active_.end(), handle.get()));
    if (result.outcome == RunOutcome::Completed)
      ++outcome.completed;
    else
      ++outcome.stopped;
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

}  // namespace xmc
