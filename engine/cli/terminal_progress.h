#pragma once
// Progress for the command line: a redrawn bar with rate and ETA on a terminal, plain periodic lines
// otherwise (logs, CI). Writes to stderr so that stdout stays machine-readable.
#include <chrono>
#include <cstdio>
#include <string>

#include "engine/core/progress.h"

namespace xmc::cli {

class TerminalProgress final : public Progress {
 public:
  explicit TerminalProgress(std::FILE* out = stderr, bool quiet = false);
  void start(std::string_view task, std::int64_t total) override;
  void update(std::int64_t done) override;
  void finish() override;

 private:
  void draw(bool final_line);

  std::FILE* out_;
  bool interactive_;
  bool quiet_;
  std::string task_;
  std::int64_t total_ = 0;
  std::int64_t done_ = 0;
  std::chrono::steady_clock::time_point started_, last_draw_;
  bool active_ = false;
};

/// "1.2k", "3.4M": compact counts for rates.
std::string compact_count(double value);
/// "12.3k/s", "2.5/s", or below one a second "1 per 2.5 s"; "" when nothing is done yet.
std::string compact_rate(double per_second);
/// "42s", "3m05s", "1h02m".
std::string compact_duration(double seconds);

}  // namespace xmc::cli
