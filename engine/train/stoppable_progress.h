#pragma once
// Plain C++. The progress reporter a training run hands its work: it forwards to the caller's display and says
// "cancelled" only while work that may be dropped and done again runs (StoppableWork marks it): an evaluation,
// which changes no training state, and an epoch's start (clustering, shortlist refresh) for a method that can start
// the epoch again. Every other stop waits for a step boundary, where the run checkpoints.
#include <atomic>

#include "engine/core/progress.h"

namespace xmc {

class ReportOnlyProgress final : public Progress {
 public:
  Progress* target = &silent_progress();
  const std::atomic<bool>* stop_requested = nullptr;
  bool stoppable = false;
  void start(std::string_view task, std::int64_t total) override { target->start(task, total); }
  void update(std::int64_t done) override { target->update(done); }
  void finish() override { target->finish(); }
  bool cancelled() const override { return stoppable && stop_requested != nullptr && stop_requested->load(); }
};

/// Marks the reporter stoppable (`on`) for its own lifetime.
class StoppableWork {
 public:
  StoppableWork(ReportOnlyProgress& reporter, bool on) : reporter_(reporter) { reporter_.stoppable = on; }
  ~StoppableWork() { reporter_.stoppable = false; }
  StoppableWork(const StoppableWork&) = delete;
  StoppableWork& operator=(const StoppableWork&) = delete;

 private:
  ReportOnlyProgress& reporter_;
};

}  // namespace xmc
