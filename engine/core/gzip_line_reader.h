#pragma once
// Line-by-line reading of gzip-compressed (or plain) text files, with line numbers for errors.
#include <cstddef>
#include <filesystem>
#include <string>

namespace xmc {

class GzipLineReader {
 public:
  explicit GzipLineReader(const std::filesystem::path& path);  ///< throws InputError naming the file
  ~GzipLineReader();
  GzipLineReader(const GzipLineReader&) = delete;
  GzipLineReader& operator=(const GzipLineReader&) = delete;

  /// Next line without its terminator; false at end of file.
  bool next(std::string& line);
  std::size_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  /// Compressed bytes consumed so far and the compressed file size (for progress).
  std::size_t compressed_offset() const;
  std::size_t file_size() const { return file_size_; }

 private:
  std::string path_;
  void* file_ = nullptr;  // gzFile
  std::size_t line_number_ = 0;
  std::size_t file_size_ = 0;
};

}  // namespace xmc
