#include "engine/core/atomic_file.h"

#include <unistd.h>

#include "engine/core/error.h"

namespace xmc {

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, std::ios::openmode mode)
    : path_(std::move(path)),
      temp_(path_.string() + ".tmp" + std::to_string(::getpid())),
      out_(temp_, mode | std::ios::out | std::ios::trunc) {
  if (!out_) throw InputError(path_.string(), "cannot open file for writing (does the folder exist and is it writable?)");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void AtomicFileWriter::commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok) throw InputError(path_.string(), "write failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) throw InputError(path_.string(), "cannot move the finished file into place: " + ec.message());
  committed_ = true;
}

}  // namespace xmc
