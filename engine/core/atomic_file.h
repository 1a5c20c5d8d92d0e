#pragma once
// Writes a file through a temporary sibling that is renamed into place on commit(), so a crash or an
// error never leaves a half-written dataset, checkpoint or report behind. The file and its folder are
// fsynced around the rename: after commit() returns, a power cut keeps either the old or the new file.
#include <filesystem>
#include <fstream>

namespace xmc {

/// A temporary sibling of `path` no other writer (process, thread or earlier call) uses.
std::filesystem::path unique_temp_path(const std::filesystem::path& path);
/// Makes a finished `temp` file durable as `path`: fsync(temp), rename over `path`, fsync(the folder). Then
/// removes temporaries of `path` that killed processes left behind.
/// Throws xmc::InputError naming `path` on failure (the temporary file is removed).
void durable_rename(const std::filesystem::path& temp, const std::filesystem::path& path);

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path, std::ios::openmode mode = std::ios::out);
  ~AtomicFileWriter();  ///< removes the temporary file if commit() was not reached
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  std::ofstream& stream() { return out_; }
  /// Flushes, checks for write errors and renames the temporary file over the target.
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace xmc
