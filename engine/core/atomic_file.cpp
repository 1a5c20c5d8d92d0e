#include "engine/core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <random>
#include <thread>

#include "engine/core/error.h"
#include "engine/core/write_failure.h"

namespace xmc {
namespace {

/// fsync of a file or folder by path; false (errno set) when it cannot be opened or synced.
bool sync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

/// Fault injection for the crash tests (as SQLite's suite injects faults): XMC_KILL_AT="STAGE:TEXT:N" kills this
/// process with SIGKILL at stage STAGE of the N-th durable_rename() whose target path contains TEXT. Stages:
/// before-sync (the temporary file written, not yet synced), before-rename (synced, not yet in place),
/// after-rename (in place, its folder not yet synced). Unset, as outside tests: nothing happens.
struct KillPoint {
  std::string stage, text;
  int number = 0;
};

const KillPoint* kill_point() {
  static const std::optional<KillPoint> point = []() -> std::optional<KillPoint> {
    const char* spec = std::getenv("XMC_KILL_AT");
    if (spec == nullptr) return std::nullopt;
    const std::string text(spec);
    const auto first = text.find(':'), last = text.rfind(':');
    if (first == std::string::npos || last == first) return std::nullopt;
    return KillPoint{text.substr(0, first), text.substr(first + 1, last - first - 1), std::atoi(text.c_str() + last + 1)};
  }();
  return point ? &*point : nullptr;
}

/// Which matching rename this is (1, 2, ...), or 0 when no kill point is set or `path` does not match.
int rename_number(const std::filesystem::path& path) {
  static std::atomic<int> count{0};
  const KillPoint* point = kill_point();
  if (point == nullptr || path.string().find(point->text) == std::string::npos) return 0;
  return count.fetch_add(1) + 1;
}

void maybe_killed_at(const char* stage, int number) {
  const KillPoint* point = kill_point();
  if (point != nullptr && number != 0 && number == point->number && point->stage == stage) ::kill(::getpid(), SIGKILL);
}

/// Removes the temporary siblings of `path` (unique_temp_path's "NAME.tmpPID-...") left by processes that no
/// longer run: a writer killed mid-write leaves one, as large as the file (a checkpoint can be gigabytes), and
/// nothing else would ever remove it. A live process's, or one whose PID was reused, is left alone.
void remove_stale_temporaries(const std::filesystem::path& path) {
  const std::string prefix = path.filename().string() + ".tmp";
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      std::filesystem::remove(it->path(), ignored);
    }
  }
}

}  // namespace

std::filesystem::path unique_temp_path(const std::filesystem::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t salt = std::random_device{}();
  const std::uint64_t tag = salt ^ (std::hash<std::thread::id>{}(std::this_thread::get_id()) * 0x9E3779B97F4A7C15ULL) ^ counter.fetch_add(1);
  return path.string() + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(tag % 1000000007ULL) + "-" + std::to_string(counter.load());
}

void durable_rename(const std::filesystem::path& temp, const std::filesystem::path& path) {
  std::error_code ec;
  const int number = rename_number(path);
  maybe_killed_at("before-sync", number);
  if (!sync_path(temp, O_RDONLY)) {
    const std::string why = std::strerror(errno);
    std::filesystem::remove(temp, ec);
    throw InputError(path.string(), "cannot flush the finished file to disk: " + why);
  }
  maybe_killed_at("before-rename", number);
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw InputError(path.string(), "cannot move the finished file into place: " + ec.message());
  }
  maybe_killed_at("after-rename", number);
  remove_stale_temporaries(path);
  // The rename itself lives in the folder: sync it too (some file systems refuse; the file is in place).
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  sync_path(folder, O_RDONLY | O_DIRECTORY);
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, std::ios::openmode mode)
    : path_(std::move(path)),
      temp_(unique_temp_path(path_)),
      out_(temp_, mode | std::ios::out | std::ios::trunc) {
  if (!out_) throw InputError(path_.string(), "cannot open file for writing (does the folder exist and is it writable?)");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void AtomicFileWriter::commit() {
  errno = 0;
  out_.flush();
  const int saved = errno;
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok) {
    std::error_code ec;
    const std::uintmax_t written = std::filesystem::file_size(temp_, ec);
    throw InputError(path_.string(), "write failed: " + why_write_failed(path_, ec ? 0 : written, saved));
  }
  committed_ = true;  // durable_rename removes the temporary file itself when it fails
  durable_rename(temp_, path_);
}

}  // namespace xmc
