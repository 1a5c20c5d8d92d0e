#pragma once
// Progress of long work (import, build, training, indexing, evaluation). The engine reports to this
// interface; the CLI draws a terminal bar and the GUI a progress bar. Cancellation is polled here too.
#include <cstdint>
#include <string_view>

namespace xmc {

class Progress {
 public:
  virtual ~Progress() = default;
  /// A new task begins; total = number of work units, or 0 when unknown.
  virtual void start(std::string_view task, std::int64_t total) = 0;
  /// `done` units of the current task are finished (absolute, not a delta).
  virtual void update(std::int64_t done) = 0;
  /// The current task ended.
  virtual void finish() = 0;
  /// True when the user asked to stop; long loops check it and throw xmc::Cancelled.
  virtual bool cancelled() const { return false; }
};

/// Reports nothing; the default where a caller passes no Progress.
class SilentProgress final : public Progress {
 public:
  void start(std::string_view, std::int64_t) override {}
  void update(std::int64_t) override {}
  void finish() override {}
};

SilentProgress& silent_progress();

}  // namespace xmc
