#include "engine/core/gzip_line_reader.h"

#include <zlib.h>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {

GzipLineReader::GzipLineReader(const std::filesystem::path& path) : path_(path.string()) {
  require_regular_file(path);
  file_ = gzopen(path.c_str(), "rb");  // reads plain files transparently too
  if (file_ == nullptr) throw InputError(path_, "cannot open file for reading");
  gzbuffer(static_cast<gzFile>(file_), 1 << 20);
  std::error_code ec;
  file_size_ = static_cast<std::size_t>(std::filesystem::file_size(path, ec));
}

GzipLineReader::~GzipLineReader() {
  if (file_ != nullptr) gzclose(static_cast<gzFile>(file_));
}

std::size_t GzipLineReader::compressed_offset() const {
  const auto offset = gzoffset(static_cast<gzFile>(file_));
  return offset < 0 ? 0 : static_cast<std::size_t>(offset);
}

bool GzipLineReader::next(std::string& line) {
  auto* gz = static_cast<gzFile>(file_);
  line.clear();
  char chunk[1 << 16];
  bool got_any = false;
  while (gzgets(gz, chunk, sizeof chunk) != nullptr) {
    got_any = true;
    line += chunk;
    if (!line.empty() && line.back() == '\n') break;
  }
  int err = Z_OK;
  const char* message = gzerror(gz, &err);
  if (err != Z_OK && err != Z_STREAM_END)
    throw InputError(path_, line_number_ + 1, std::string("gzip data is corrupt: ") + message);
  if (!got_any) return false;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

}  // namespace xmc
