#include "engine/cli/terminal_progress.h"

#include <unistd.h>

#include <cmath>

namespace xmc::cli {

using Clock = std::chrono::steady_clock;

std::string compact_count(double value) {
  char buf[32];
  if (value >= 1e9) std::snprintf(buf, sizeof buf, "%.1fG", value / 1e9);
  else if (value >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", value / 1e6);
  else if (value >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", value / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", value);
  return buf;
}

std::string compact_rate(double per_second) {
  if (!(per_second > 0)) return {};
  char buf[48];
  // Below one a second, the time each takes: "0/s" said nothing about a 2.5 s step.
  if (per_second < 1) std::snprintf(buf, sizeof buf, "1 per %.1f s", 1.0 / per_second);
  else if (per_second < 10) std::snprintf(buf, sizeof buf, "%.1f/s", per_second);
  else return compact_count(per_second) + "/s";
  return buf;
}

std::string compact_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

TerminalProgress::TerminalProgress(std::FILE* out, bool quiet)
    : out_(out), interactive_(::isatty(::fileno(out)) != 0), quiet_(quiet) {}

void TerminalProgress::start(std::string_view task, std::int64_t total) {
  if (active_) finish();
  task_ = std::string(task);
  total_ = total;
  done_ = 0;
  started_ = last_draw_ = Clock::now();
  active_ = true;
  if (!interactive_ && !quiet_) std::fprintf(out_, "%s ...\n", task_.c_str());
}

void TerminalProgress::update(std::int64_t done) {
  done_ = done;
  const auto now = Clock::now();
  // Redraw a terminal bar 10x a second; print a plain line every 10 s elsewhere.
  const auto interval = interactive_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  if (now - last_draw_ >= interval) {
    last_draw_ = now;
    draw(false);
  }
}

void TerminalProgress::finish() {
  if (!active_) return;
  draw(true);
  active_ = false;
}

void TerminalProgress::draw(bool final_line) {
  if (quiet_) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  std::string text = task_;
  if (total_ > 0) {
    const double fraction = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    char pct[16];
    std::snprintf(pct, sizeof pct, " %3.0f%% ", 100 * fraction);
    text += pct;
    if (interactive_) {
      constexpr int kWidth = 24;
      const int filled = static_cast<int>(fraction * kWidth);
      // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.
      text.append("[").append(static_cast<std::size_t>(filled), '#').append(static_cast<std::size_t>(kWidth - filled), ' ').append("] ");
    }
    text.append(compact_count(static_cast<double>(done_))).append("/").append(compact_count(static_cast<double>(total_)));
    if (const std::string r = compact_rate(rate); !r.empty()) text.append(", ").append(r);
    if (final_line) text.append(", took ").append(compact_duration(elapsed));
    else if (rate > 0) text.append(", ETA ").append(compact_duration(static_cast<double>(total_ - done_) / rate));
  } else {
    text.append(" ").append(compact_count(static_cast<double>(done_))).append(" done, ").append(compact_duration(elapsed));
  }
  if (interactive_) std::fprintf(out_, "\r\033[K%s%s", text.c_str(), final_line ? "\n" : "");
  else std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace xmc::cli
