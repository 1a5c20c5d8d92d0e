#include "engine/core/write_failure.h"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace xmc {

std::string why_write_failed(const std::filesystem::path& file, std::uintmax_t bytes, int saved_errno) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (saved_errno == EFBIG || (bytes > 0 && bytes >= static_cast<std::uintmax_t>(limit.rlim_cur))))
    return std::string(std::strerror(EFBIG)) + ": the process may write files of at most " + std::to_string(limit.rlim_cur) +
           " bytes (ulimit -f, a quota)" + (bytes > 0 ? "; this file takes " + std::to_string(bytes) + " bytes or more" : std::string());
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  struct statvfs fs {};
  const bool known = ::statvfs(folder.c_str(), &fs) == 0;
  const std::uintmax_t free_bytes = known ? static_cast<std::uintmax_t>(fs.f_bavail) * fs.f_frsize : 0;
  if (saved_errno == ENOSPC || saved_errno == EDQUOT || (known && free_bytes < std::max<std::uintmax_t>(bytes, 1))) {
    return std::string(std::strerror(saved_errno == EDQUOT ? EDQUOT : ENOSPC)) + ": " + folder.string() + " has " + std::to_string(free_bytes) +
           " bytes free" + (bytes > 0 ? "; this file takes " + std::to_string(bytes) + " bytes or more" : std::string());
  }
  if (saved_errno != 0) return std::strerror(saved_errno);
  return "the write was refused (the file system gave no reason)";
}

}  // namespace xmc
