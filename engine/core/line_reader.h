#pragma once
// Reads a text file line by line with line numbers, fast enough for multi-GB XC files.
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace xmc {

class LineReader {
 public:
  /// Opens `path`; throws InputError naming the file when it cannot be opened.
  explicit LineReader(const std::filesystem::path& path);

  /// Next line without its terminator ("\n" or "\r\n"); false at end of file. The view stays valid
  /// until the next call.
  bool next(std::string_view& line);

  /// 1-based number of the line last returned by next().
  std::size_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  /// Bytes consumed so far (for progress).
  std::size_t bytes_read() const { return consumed_; }
  std::size_t file_size() const { return file_size_; }

 private:
  bool refill();

  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::size_t line_number_ = 0;
  std::size_t consumed_ = 0;
  std::size_t file_size_ = 0;
  bool eof_ = false;
};

}  // namespace xmc
