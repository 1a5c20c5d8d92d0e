#include "engine/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
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

}  // namespace

std::filesystem::path unique_temp_path(const std::filesystem::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t salt = std::random_device{}();
  const std::uint64_t tag = salt ^ (std::hash<std::thread::id>{}(std::this_thread::get_id()) * 0x9E3779B97F4A7C15ULL) ^ counter.fetch_add(1);
  return path.string() + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(tag % 1000000007ULL) + "-" + std::to_string(counter.load());
}

void durable_rename(const std::filesystem::path& temp, const std::filesystem::path& path) {
  std::error_code ec;
  if (!sync_path(temp, O_RDONLY)) {
    const std::string why = std::strerror(errno);
    std::filesystem::remove(temp, ec);
    throw InputError(path.string(), "cannot flush the finished file to disk: " + why);
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw InputError(path.string(), "cannot move the finished file into place: " + ec.message());
  }
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
