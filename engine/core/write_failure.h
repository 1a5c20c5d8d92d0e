#pragma once
// Why writing a file failed, in words a user can act on. A failed stream write keeps no cause (iostreams and
// QSaveFile report "write failed" or "Unknown error"), so the cause is looked up: the process's file-size
// limit (ulimit -f, a quota) that `bytes` would pass, a full file system, else the errno saved at the failure.
#include <cstdint>
#include <filesystem>
#include <string>

namespace xmc {

/// E.g. "File too large: the process may write files of at most 51200 bytes (ulimit -f)", "No space left on
/// device: /data has 0 bytes free". `file` is the file written (its folder is examined), `bytes` how large it
/// is or would have been (0 = unknown), `saved_errno` errno right after the failure (0 = none).
std::string why_write_failed(const std::filesystem::path& file, std::uintmax_t bytes, int saved_errno);

}  // namespace xmc
