#pragma once
// Plain C++. What a training run tells its listeners (the run recorder, the GUI, the CLI's progress line), as
// TrainEvents: each stamped with the run's id and, unless it says otherwise, the step the run is at; the samples
// of the process's CPU and memory use among them.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/process_usage.h"
#include "engine/eval/metrics.h"
#include "engine/records/train_events.h"

namespace xmc {

class RunEvents {
 public:
  using Listener = std::function<void(const TrainEvent&)>;

  /// `step`: the run's step counter, read whenever an event does not give its own step.
  explicit RunEvents(const std::int64_t& step) : step_(step) {}
  RunEvents(const RunEvents&) = delete;
  RunEvents& operator=(const RunEvents&) = delete;

  void subscribe(Listener listener) { listeners_.push_back(std::move(listener)); }
  /// Stamped on every event from now on (a worker of a job learns it from rank 0 after it started).
  void set_run_id(std::int64_t run_id) { run_id_ = run_id; }

  void publish(TrainEvent event);
  void publish(TrainEvent::Kind kind, std::string message = {});
  /// A line of the run's log (a Phase event).
  void phase(const std::string& message) { publish(TrainEvent::Kind::Phase, message); }
  /// phase() as a callback, for the components the run hands its log to.
  const std::function<void(const std::string&)>& log() const { return log_; }

  /// Starts the clock of the CPU-use samples.
  void start_clock() { system_use_.sample(); }
  /// A sample of this process's use of the machine, at `epoch`, when one is due (every 10 s) or `force`d.
  void system_use(double epoch, bool force);

  /// The run goes on from `step` (a resume), or starts over from 0 (what it recorded before is void).
  void restored(std::int64_t step, double epoch);
  /// The run chose `value` for config `key` while training, at `epoch`.
  void setting_chosen(const std::string& key, double value, double epoch);
  /// One optimiser step of `stage`, whose loss is stored under `loss_series`, on `batch_rows` rows that took `took`.
  void step(const std::string& stage, const std::string& loss_series, std::int64_t total_steps, double epoch, double loss, double lr,
            double batch_rows, std::chrono::steady_clock::duration took);
  /// An epoch of `stage` ended at `epoch` (the run's axis), training `samples` rows in `seconds`; a system-use sample follows.
  void epoch_end(const std::string& stage, double epoch, std::int64_t samples, double seconds);
  /// The run ends at `epoch`: Finished, or Stopped, saying `message`, with the metrics and decile-wise P@5 of `final`
  /// (its final evaluation; null for a run stopped by the user).
  void ended(bool completed, double epoch, std::string message, const EvalResult* final = nullptr);

 private:
  const std::int64_t& step_;
  std::int64_t run_id_ = 0;
  std::vector<Listener> listeners_;
  const std::function<void(const std::string&)> log_ = [this](const std::string& message) { phase(message); };
  ProcessUsageSampler system_use_;   ///< published every 10 s and at epoch ends
  std::int64_t last_system_use_step_ = -1;
};

}  // namespace xmc
