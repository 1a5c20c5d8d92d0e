#pragma once
// Float rows of one width in an unlinked temporary file: written in order, read back by row range. The file has
// no name, so a process that is killed leaves nothing behind; its pages sit in the system's page cache, not in
// the process's memory. Used to keep what a phase made for a later phase that reads it a slice at a time (the
// training queries' encodings, made for an epoch's clustering and read again by its shortlist refresh).
#include <cstdint>
#include <filesystem>

namespace xmc {

class FloatRowFile {
 public:
  /// An empty file of rows of `width` floats under `directory`. Throws Error naming the directory when none can be
  /// made there.
  FloatRowFile(const std::filesystem::path& directory, std::int64_t width);
  ~FloatRowFile();
  FloatRowFile(const FloatRowFile&) = delete;
  FloatRowFile& operator=(const FloatRowFile&) = delete;

  /// Appends `count` rows (count x width floats). Throws Error saying why (a full file system, a file-size limit)
  /// when they cannot all be written; the rows written before stay readable.
  void append(const float* rows, std::int64_t count);
  /// Rows [begin, end) into `out` ((end - begin) x width floats). Throws Error for a range outside the rows written.
  void read(std::int64_t begin, std::int64_t end, float* out) const;

  std::int64_t rows() const { return rows_; }
  std::int64_t width() const { return width_; }
  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
  std::int64_t width_;
  std::int64_t rows_ = 0;
  int fd_ = -1;
};

}  // namespace xmc
