#include "engine/core/float_row_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/core/write_failure.h"

namespace xmc {
namespace {

/// An open, already unlinked file under `directory`: O_TMPFILE where the file system has it, else a named one
/// removed at once.
int open_unlinked(const std::filesystem::path& directory) {
#ifdef O_TMPFILE
  const int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
#endif
  std::string name = (directory / "xmc-rows-XXXXXX").string();
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named < 0) throw Error("cannot make a temporary file in " + directory.string() + ": " + std::strerror(errno));
  ::unlink(name.c_str());
  return named;
}

}  // namespace

FloatRowFile::FloatRowFile(const std::filesystem::path& directory, std::int64_t width) : directory_(directory), width_(width) {
  if (width < 1) throw Error("FloatRowFile: rows need at least one column, got " + std::to_string(width));
  fd_ = open_unlinked(directory);
}

FloatRowFile::~FloatRowFile() {
  if (fd_ >= 0) ::close(fd_);
}

void FloatRowFile::append(const float* rows, std::int64_t count) {
  const auto row_bytes = static_cast<std::size_t>(width_) * sizeof(float);
  const auto* bytes = reinterpret_cast<const char*>(rows);
  std::size_t left = static_cast<std::size_t>(count) * row_bytes;
  auto offset = static_cast<off_t>(static_cast<std::size_t>(rows_) * row_bytes);
  while (left > 0) {
    const ssize_t wrote = ::pwrite(fd_, bytes, left, offset);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      const int saved = wrote < 0 ? errno : ENOSPC;
      throw Error("cannot write a temporary file in " + directory_.string() + ": " +
                  why_write_failed(directory_ / "temporary", static_cast<std::uintmax_t>(offset) + left, saved));
    }
    bytes += wrote;
    left -= static_cast<std::size_t>(wrote);
    offset += wrote;
  }
  rows_ += count;
}

void FloatRowFile::read(std::int64_t begin, std::int64_t end, float* out) const {
  if (begin < 0 || end < begin || end > rows_)
    throw Error("FloatRowFile: rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") asked of " + std::to_string(rows_));
  const auto row_bytes = static_cast<std::size_t>(width_) * sizeof(float);
  auto* bytes = reinterpret_cast<char*>(out);
  std::size_t left = static_cast<std::size_t>(end - begin) * row_bytes;
  auto offset = static_cast<off_t>(static_cast<std::size_t>(begin) * row_bytes);
  while (left > 0) {
    const ssize_t got = ::pread(fd_, bytes, left, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw Error("cannot read back a temporary file in " + directory_.string() + ": " + (got < 0 ? std::strerror(errno) : "it ended early"));
    bytes += got;
    left -= static_cast<std::size_t>(got);
    offset += got;
  }
}

}  // namespace xmc
