#include "engine/train/set_aside_tensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "engine/core/allocator_tuning.h"
#include "engine/core/error.h"
#include "engine/core/write_failure.h"

namespace xmc {
namespace {

/// Files are written and read a piece at a time: no stdio buffer of a tensor's size.
constexpr std::int64_t kPiece = std::int64_t{64} << 20;

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

/// Calls `move(at, n)` for the pieces [at, at + n) of `total` bytes, in order.
template <typename Move>
void for_each_piece(std::int64_t total, Move&& move) {
  for (std::int64_t at = 0; at < total; at += kPiece) move(at, static_cast<std::size_t>(std::min(kPiece, total - at)));
}

}  // namespace

std::vector<torch::Tensor> SetAsideTensors::eligible(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& t : tensors) {
    if (!t.defined() || !t.is_cpu() || t.numel() == 0 || !t.is_contiguous() || t.storage_offset() != 0) continue;
    // A view's storage is shared with its base: freeing the view would free nothing, and reading it back into
    // storage of its own would part it from the base.
    const c10::Storage& storage = t.storage();
    if (storage.use_count() != 1 || storage.nbytes() != t.nbytes()) continue;
    if (std::any_of(out.begin(), out.end(), [&](const torch::Tensor& o) { return o.unsafeGetTensorImpl() == t.unsafeGetTensorImpl(); })) continue;
    out.push_back(t);
  }
  return out;
}

std::int64_t SetAsideTensors::set_aside_bytes(const std::vector<torch::Tensor>& tensors) {
  std::int64_t bytes = 0;
  for (const torch::Tensor& t : eligible(tensors)) bytes += static_cast<std::int64_t>(t.nbytes());
  return bytes;
}

SetAsideTensors::SetAsideTensors(const std::vector<torch::Tensor>& tensors, std::filesystem::path file) : file_(std::move(file)) {
  for (const torch::Tensor& t : eligible(tensors)) {
    held_.push_back({t, t.sizes().vec()});
    bytes_ += static_cast<std::int64_t>(t.nbytes());
  }
  if (held_.empty()) {
    restored_ = true;
    return;
  }
  bool created = false;  // what stands at `file` is only removed when this made it
  const auto fail = [&](int error) {
    std::error_code ignored;
    if (created) std::filesystem::remove(file_, ignored);
    throw Error("could not set " + std::to_string(bytes_) + " bytes of training state aside in " + file_.string() + ": " +
                why_write_failed(file_, static_cast<std::uintmax_t>(bytes_), error));
  };
  {
    errno = 0;
    File out(std::fopen(file_.c_str(), "wb"));
    if (!out) fail(errno);
    created = true;
    for (const Held& h : held_) {
      const auto* bytes = static_cast<const char*>(h.tensor.data_ptr());
      for_each_piece(static_cast<std::int64_t>(h.tensor.nbytes()), [&](std::int64_t at, std::size_t n) {
        errno = 0;
        if (std::fwrite(bytes + at, 1, n, out.get()) != n) fail(errno);
      });
    }
    errno = 0;
    if (std::fflush(out.get()) != 0) fail(errno);
    std::FILE* raw = out.release();
    errno = 0;
    if (std::fclose(raw) != 0) fail(errno);
  }
  torch::NoGradGuard no_grad;
  for (Held& h : held_) h.tensor.set_();  // the storage goes with its last handle: this one
}

void SetAsideTensors::restore() {
  if (restored_) return;
  restored_ = true;
  const auto fail = [&](const std::string& what) {
    throw Error("could not read the training state set aside during the evaluation back from " + file_.string() + ": " + what +
                " (the run's last checkpoint is left as it was)");
  };
  errno = 0;
  File in(std::fopen(file_.c_str(), "rb"));
  if (!in) fail(std::strerror(errno));
  // Its size first: a file cut short or grown is refused before any tensor is filled from it.
  std::error_code size_error;
  const std::uintmax_t size = std::filesystem::file_size(file_, size_error);
  if (size_error) fail(size_error.message());
  if (size != static_cast<std::uintmax_t>(bytes_))
    fail("the file holds " + std::to_string(size) + " bytes, not the " + std::to_string(bytes_) + " written");
  torch::NoGradGuard no_grad;
  for (Held& h : held_) {
    torch::Tensor fresh = torch::empty(h.sizes, h.tensor.options());  // emptied, it kept its type
    auto* bytes = static_cast<char*>(fresh.data_ptr());
    for_each_piece(static_cast<std::int64_t>(fresh.nbytes()), [&](std::int64_t at, std::size_t n) {
      errno = 0;
      if (std::fread(bytes + at, 1, n, in.get()) != n) fail(std::ferror(in.get()) != 0 ? std::strerror(errno) : "the file ended early");
    });
    h.tensor.set_(fresh);
  }
  in.reset();
  std::error_code ignored;
  std::filesystem::remove(file_, ignored);
}

SetAsideTensors::~SetAsideTensors() {
  if (restored_) return;
  std::error_code ignored;
  std::filesystem::remove(file_, ignored);
}

std::unique_ptr<SetAsideTensors> set_aside_if_large(std::vector<torch::Tensor> idle, std::int64_t min_mb, const std::filesystem::path& file,
                                                    const std::function<void()>& before, const std::function<void(const std::string&)>& phase) {
  const std::int64_t bytes = SetAsideTensors::set_aside_bytes(idle);
  if (bytes == 0 || bytes < (min_mb << 20)) return nullptr;
  before();
  try {
    auto aside = std::make_unique<SetAsideTensors>(idle, file);
    idle.clear();  // the last other handles: the memory goes back now
    return_freed_memory();
    char size[32];
    std::snprintf(size, sizeof size, "%.1f MB", static_cast<double>(bytes) / (1 << 20));
    phase("evaluation: " + std::string(size) + " of optimiser moments and shortlists set aside in " + file.filename().string() +
          " until it ends (eval.set_aside_mb " + std::to_string(min_mb) + ")");
    return aside;
  } catch (const Error& e) {
    phase(std::string(e.what()) + "; evaluating with them in memory");
    return nullptr;
  }
}

void bring_back(std::unique_ptr<SetAsideTensors>& aside, std::string& lost) {
  if (!aside) return;
  try {
    aside->restore();
  } catch (const std::exception& e) {
    lost = e.what();
    aside.reset();
    throw;
  }
  aside.reset();
}

}  // namespace xmc
