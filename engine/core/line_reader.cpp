#include "engine/core/line_reader.h"

#include <cstring>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {

LineReader::LineReader(const std::filesystem::path& path)
    : path_(path.string()), file_((require_regular_file(path), std::fopen(path.c_str(), "rb")), &std::fclose), buffer_(1 << 20) {
  if (!file_) throw InputError(path_, "cannot open file for reading");  // a regular file (checked above) we may not read
  std::error_code ec;
  file_size_ = static_cast<std::size_t>(std::filesystem::file_size(path, ec));
}

bool LineReader::refill() {
  if (eof_) return false;
  // Keep the unread tail at the front of the buffer.
  const std::size_t tail = end_ - begin_;
  if (tail > 0 && begin_ > 0) std::memmove(buffer_.data(), buffer_.data() + begin_, tail);
  begin_ = 0;
  end_ = tail;
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
  const std::size_t got = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_.get());
  if (got == 0) {
    if (std::ferror(file_.get())) throw InputError(path_, line_number_ + 1, "read error");
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool LineReader::next(std::string_view& line) {
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
      line = std::string_view(start, len);
      begin_ += len + 1;
      consumed_ += len + 1;
      break;
    }
    if (!refill()) {
      if (begin_ == end_) return false;
      // Last line without a terminating newline.
      line = std::string_view(buffer_.data() + begin_, end_ - begin_);
      consumed_ += end_ - begin_;
      begin_ = end_;
      break;
    }
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_number_;
  return true;
}

}  // namespace xmc
