#pragma once
// Writes a file through a temporary sibling that is renamed into place on commit(), so a crash or an
// error never leaves a half-written dataset, checkpoint or report behind.
#include <filesystem>
#include <fstream>

namespace xmc {

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
