#include "engine/data/image_bank.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/data/npy_file.h"

static_assert(std::endian::native == std::endian::little, ".npy '<' data is little-endian");

namespace xmc {
namespace {

/// IEEE 754 binary16 -> binary32, subnormals, infinities and NaN included.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

/// A read-only mapping of `length` bytes of the open file `fd`, unmapped when the last owner lets go.
std::shared_ptr<const void> map_file(int fd, std::size_t length, const std::string& file) {
  if (length == 0) return std::make_shared<int>(0);
  void* address = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) throw InputError(file, std::string("cannot be mapped into memory: ") + std::strerror(errno));
  return std::shared_ptr<const void>(address, [length](const void* p) { ::munmap(const_cast<void*>(p), length); });
}

std::vector<std::int32_t> read_counts(const std::filesystem::path& path, std::int64_t rows, std::int64_t slots, const std::filesystem::path& bank) {
  const std::string file = path.string();
  const NpyHeader header = read_npy_header(path);
  std::size_t element = 0;
  if (header.descr == "<i4") element = 4;
  else if (header.descr == "<i8") element = 8;
  else throw InputError(file, "holds '" + header.descr + "' elements; an image count file holds int32 ('<i4') or int64 ('<i8')");
  if (header.shape.size() != 1)
    throw InputError(file, "has " + std::to_string(header.shape.size()) + " dimensions; an image count file is one count per item, [rows]");
  if (header.shape[0] != rows)
    throw InputError(file, "has " + std::to_string(header.shape[0]) + " counts, but " + bank.string() + " has " + std::to_string(rows) + " rows");
  const std::uint64_t expected = header.data_offset + static_cast<std::uint64_t>(rows) * element;
  const std::uint64_t size = std::filesystem::file_size(path);
  if (size != expected)
    throw InputError(file, "is " + std::to_string(size) + " bytes, but its header ([" + std::to_string(rows) + "] " + header.descr + ") needs " +
                               std::to_string(expected) + ": truncated or damaged");
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(header.data_offset));
  std::vector<std::int32_t> counts(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t value = 0;
    if (element == 4) {
      std::int32_t v = 0;
      in.read(reinterpret_cast<char*>(&v), 4);
      value = v;
    } else {
      in.read(reinterpret_cast<char*>(&value), 8);
    }
    if (!in) throw InputError(file, "could not be read to its end");
    if (value < 0 || value > slots)
      throw InputError(file, "row " + std::to_string(r) + " counts " + std::to_string(value) + " images, outside 0 .. " + std::to_string(slots) +
                                 " (the bank's M)");
    counts[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(value);
  }
  return counts;
}

}  // namespace

ImageBank ImageBank::open(const std::filesystem::path& bank, const std::filesystem::path& counts) {
  const std::string file = bank.string();
  const NpyHeader header = read_npy_header(bank);
  ImageBank out;
  out.source_ = bank;
  std::size_t element = 0;
  if (header.descr == "<f4") {
    out.precision_ = Precision::float32;
    element = 4;
  } else if (header.descr == "<f2") {
    out.precision_ = Precision::float16;
    element = 2;
  } else {
    throw InputError(file, "holds '" + header.descr + "' elements; an image bank holds float32 ('<f4') or float16 ('<f2')");
  }
  if (header.shape.size() == 3) {
    out.rows_ = header.shape[0];
    out.slots_ = header.shape[1];
    out.dim_ = header.shape[2];
  } else if (header.shape.size() == 2) {
    out.rows_ = header.shape[0];
    out.slots_ = 1;
    out.dim_ = header.shape[1];
  } else {
    throw InputError(file, "has " + std::to_string(header.shape.size()) +
                               " dimensions; an image bank is [rows, M, m] (M images of m numbers per item) or [rows, m]");
  }
  if (out.slots_ < 1 || out.slots_ > 64) throw InputError(file, "has M = " + std::to_string(out.slots_) + " images per item; 1 to 64 are read");
  if (out.dim_ < 1 || out.dim_ > 65536) throw InputError(file, "has embeddings of " + std::to_string(out.dim_) + " numbers; 1 to 65536 are read");

  if (static_cast<double>(out.rows_) * static_cast<double>(out.slots_) * static_cast<double>(out.dim_) * static_cast<double>(element) > 1e15)
    throw InputError(file, "header gives an impossible shape (" + std::to_string(out.rows_) + " rows)");
  const std::uint64_t data_bytes = header.element_count() * element;
  const std::uint64_t expected = header.data_offset + data_bytes;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(file, std::string("cannot be opened: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<std::uint64_t>(info.st_size) != expected) {
    const auto size = static_cast<std::uint64_t>(info.st_size);
    ::close(fd);
    throw InputError(file, "is " + std::to_string(size) + " bytes, but its header ([" + std::to_string(out.rows_) + ", " +
                               std::to_string(out.slots_) + ", " + std::to_string(out.dim_) + "] " + header.descr + ") needs " +
                               std::to_string(expected) + ": truncated or damaged");
  }
  std::shared_ptr<const void> mapping;
  try {
    mapping = map_file(fd, static_cast<std::size_t>(expected), file);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  out.storage_ = mapping;
  out.values_ = static_cast<const std::byte*>(mapping.get()) + header.data_offset;
  if (data_bytes == 0) out.values_ = nullptr;

  // A NaN in an image reaches every loss that item takes part in: refused here, by where it is.
  std::vector<float> vector(static_cast<std::size_t>(out.dim_));
  for (std::int64_t r = 0; r < out.rows_; ++r)
    for (std::int64_t s = 0; s < out.slots_; ++s) {
      out.copy_image(r, s, vector.data());
      for (const float v : vector)
        if (!std::isfinite(v))
          throw InputError(file, "row " + std::to_string(r) + ", image " + std::to_string(s) + " holds a value that is not finite");
    }
  std::error_code error;
  if (!counts.empty() && std::filesystem::exists(counts, error)) out.counts_ = read_counts(counts, out.rows_, out.slots_, bank);
  return out;
}

ImageBank ImageBank::from_values(std::int64_t rows, std::int64_t slots, std::int64_t dim, std::vector<float> values, std::vector<std::int32_t> counts) {
  if (rows < 0 || slots < 1 || dim < 1 || values.size() != static_cast<std::size_t>(rows * slots * dim))
    throw ConfigError("image bank: " + std::to_string(values.size()) + " values do not make [" + std::to_string(rows) + ", " + std::to_string(slots) + ", " +
                      std::to_string(dim) + "]");
  if (!counts.empty() && counts.size() != static_cast<std::size_t>(rows))
    throw ConfigError("image bank: " + std::to_string(counts.size()) + " counts for " + std::to_string(rows) + " rows");
  for (const std::int32_t c : counts)
    if (c < 0 || c > slots) throw ConfigError("image bank: a count of " + std::to_string(c) + " outside 0 .. " + std::to_string(slots));
  ImageBank out;
  out.rows_ = rows;
  out.slots_ = slots;
  out.dim_ = dim;
  auto held = std::make_shared<std::vector<float>>(std::move(values));
  out.values_ = reinterpret_cast<const std::byte*>(held->data());
  out.storage_ = held;
  out.counts_ = std::move(counts);
  return out;
}

namespace {

/// Value i of an array of T that may start at any address: a .npy header of any length (numpy's own pad the data
/// to 64 bytes, a damaged or hand-made one need not) puts the mapped data anywhere, and a misaligned load is
/// undefined behaviour.
template <typename T>
T load_value(const std::byte* values, std::size_t i) {
  T out;
  std::memcpy(&out, values + i * sizeof(T), sizeof(T));
  return out;
}

}  // namespace

std::int64_t ImageBank::listed_count(std::int64_t row) const {
  return counts_.empty() ? slots_ : counts_[static_cast<std::size_t>(row)];
}

bool ImageBank::blank(std::int64_t row, std::int64_t slot) const {
  const std::size_t offset = static_cast<std::size_t>((row * slots_ + slot) * dim_);
  if (precision_ == Precision::float32) {
    for (std::int64_t i = 0; i < dim_; ++i)
      if (load_value<float>(values_, offset + static_cast<std::size_t>(i)) != 0.0f) return false;
  } else {
    for (std::int64_t i = 0; i < dim_; ++i)
      if ((load_value<std::uint16_t>(values_, offset + static_cast<std::size_t>(i)) & 0x7fffu) != 0) return false;  // +0 and −0
  }
  return true;
}

std::vector<std::int64_t> ImageBank::image_slots(std::int64_t row, std::int64_t limit) const {
  if (row < 0 || row >= rows_)
    throw ConfigError("image bank " + source_.string() + ": row " + std::to_string(row) + " is outside its " + std::to_string(rows_) + " rows");
  std::vector<std::int64_t> out;
  const std::int64_t listed = listed_count(row);
  for (std::int64_t s = 0; s < listed && static_cast<std::int64_t>(out.size()) < limit; ++s)
    if (!blank(row, s)) out.push_back(s);
  return out;
}

void ImageBank::copy_image(std::int64_t row, std::int64_t slot, float* out) const {
  const std::size_t offset = static_cast<std::size_t>((row * slots_ + slot) * dim_);
  if (precision_ == Precision::float32) {
    std::memcpy(out, values_ + offset * sizeof(float), static_cast<std::size_t>(dim_) * sizeof(float));
  } else {
    for (std::int64_t i = 0; i < dim_; ++i) out[i] = half_to_float(load_value<std::uint16_t>(values_, offset + static_cast<std::size_t>(i)));
  }
}

ImageBank ImageBank::subset(std::span<const std::int64_t> rows) const {
  std::vector<float> values(rows.size() * static_cast<std::size_t>(slots_ * dim_));
  std::vector<std::int32_t> counts;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::int64_t row = rows[i];
    if (row < 0 || row >= rows_)
      throw ConfigError("image bank " + source_.string() + ": row " + std::to_string(row) + " is outside its " + std::to_string(rows_) + " rows");
    for (std::int64_t s = 0; s < slots_; ++s) copy_image(row, s, values.data() + (i * static_cast<std::size_t>(slots_) + static_cast<std::size_t>(s)) * static_cast<std::size_t>(dim_));
    if (!counts_.empty()) counts.push_back(counts_[static_cast<std::size_t>(row)]);
  }
  return from_values(static_cast<std::int64_t>(rows.size()), slots_, dim_, std::move(values), std::move(counts));
}

ImageBank ImageBank::rows_between(std::int64_t begin, std::int64_t end) const {
  if (begin < 0 || end < begin || end > rows_)
    throw ConfigError("image bank " + source_.string() + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") are outside its " +
                      std::to_string(rows_) + " rows");
  ImageBank out = *this;
  out.rows_ = end - begin;
  const std::size_t element = precision_ == Precision::float32 ? sizeof(float) : sizeof(std::uint16_t);
  if (values_ != nullptr) out.values_ = values_ + static_cast<std::size_t>(begin * slots_ * dim_) * element;
  if (!counts_.empty()) out.counts_.assign(counts_.begin() + begin, counts_.begin() + end);
  return out;
}

void ImageBank::save(const std::filesystem::path& bank, const std::filesystem::path& counts) const {
  std::vector<float> values(static_cast<std::size_t>(rows_ * slots_ * dim_));
  for (std::int64_t r = 0; r < rows_; ++r)
    for (std::int64_t s = 0; s < slots_; ++s) copy_image(r, s, values.data() + static_cast<std::size_t>((r * slots_ + s) * dim_));
  write_npy(bank, "<f4", sizeof(float), {rows_, slots_, dim_}, std::as_bytes(std::span<const float>(values)));
  if (!counts_.empty()) {
    write_npy(counts, "<i4", sizeof(std::int32_t), {rows_}, std::as_bytes(std::span<const std::int32_t>(counts_)));
  } else if (!counts.empty()) {
    std::error_code ignored;
    std::filesystem::remove(counts, ignored);
  }
}

ImageCoverage image_coverage(const ImageBank& bank) {
  ImageCoverage out;
  out.rows = bank.rows();
  out.slots = bank.slots();
  out.dim = bank.dim();
  for (std::int64_t r = 0; r < bank.rows(); ++r) {
    const auto n = static_cast<std::int64_t>(bank.image_slots(r, bank.slots()).size());
    out.images += n;
    if (n > 0) ++out.rows_with_images;
  }
  return out;
}

namespace image_files {
std::filesystem::path bank(const std::filesystem::path& dataset, const std::string& split) { return dataset / kFolder / (split + ".npy"); }
std::filesystem::path counts(const std::filesystem::path& dataset, const std::string& split) { return dataset / kFolder / (split + "_count.npy"); }
std::filesystem::path file_list(const std::filesystem::path& dataset, const std::string& split) { return dataset / kFolder / (split + "_files.txt"); }
}  // namespace image_files

std::int64_t dataset_image_dim(const std::filesystem::path& dataset) {
  for (const char* split : image_files::kSplits) {
    const auto path = image_files::bank(dataset, split);
    std::error_code error;
    if (!std::filesystem::exists(path, error)) continue;
    const NpyHeader header = read_npy_header(path);
    if (header.shape.size() < 2 || header.shape.back() < 1)
      throw InputError(path.string(), "is not an image bank: [rows, M, m] or [rows, m] expected");
    return header.shape.back();
  }
  return 0;
}

}  // namespace xmc
