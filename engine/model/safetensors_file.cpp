#include "engine/model/safetensors_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/atomic_file.h"
#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

struct DtypeEntry {
  SafeDtype dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DtypeEntry, 10> kDtypes{{
    {SafeDtype::F32, "F32", 4},
    {SafeDtype::F16, "F16", 2},
    {SafeDtype::BF16, "BF16", 2},
    {SafeDtype::F64, "F64", 8},
    {SafeDtype::I64, "I64", 8},
    {SafeDtype::I32, "I32", 4},
    {SafeDtype::I16, "I16", 2},
    {SafeDtype::I8, "I8", 1},
    {SafeDtype::U8, "U8", 1},
    {SafeDtype::BOOL, "BOOL", 1},
}};

const DtypeEntry& dtype_entry(SafeDtype dtype) {
  for (const auto& entry : kDtypes)
    if (entry.dtype == dtype) return entry;
  return kDtypes[0];  // unreachable: every enumerator has an entry
}

/// numel × element size in bytes, or nullopt on overflow.
std::optional<std::uint64_t> byte_size(std::span<const std::int64_t> shape, std::size_t element_size) {
  std::uint64_t total = element_size;
  for (const std::int64_t dim : shape)
    if (__builtin_mul_overflow(total, static_cast<std::uint64_t>(dim), &total)) return std::nullopt;
  return total;
}

/// A non-negative JSON integer, or nullopt.
std::optional<std::uint64_t> as_unsigned(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(value.get<std::int64_t>());
  return std::nullopt;
}

std::string quoted(const std::string& name) { return "tensor '" + name + "'"; }

TensorInfo parse_tensor_entry(const std::string& file, const std::string& name, const nlohmann::json& entry,
                              std::uint64_t buffer_size) {
  auto fail = [&](const std::string& reason) { return InputError(file, quoted(name) + ": " + reason); };
  if (!entry.is_object()) throw fail("header entry is not a JSON object");
  TensorInfo info;
  info.name = name;

  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) throw fail("missing or non-string \"dtype\"");
  const auto dtype = parse_safe_dtype(dtype_it->get<std::string>());
  if (!dtype)
    throw fail("unknown dtype '" + dtype_it->get<std::string>() +
               "' (supported: F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
  info.dtype = *dtype;

  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) throw fail("missing or non-array \"shape\"");
  for (const auto& dim : *shape_it) {
    const auto value = as_unsigned(dim);
    if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw fail("shape " + shape_it->dump() + " holds a value that is not a non-negative integer");
    info.shape.push_back(static_cast<std::int64_t>(*value));
  }

  const auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    throw fail("missing \"data_offsets\" or not a [begin, end] pair");
  const auto begin = as_unsigned((*offsets_it)[0]);
  const auto end = as_unsigned((*offsets_it)[1]);
  if (!begin || !end) throw fail("data_offsets " + offsets_it->dump() + " are not non-negative integers");
  info.begin = *begin;
  info.end = *end;
  std::string offsets_text = "[";  // appended piecewise: GCC 12 -O3 misreports `"[" + std::to_string(...)`
  offsets_text.append(std::to_string(info.begin)).append(", ").append(std::to_string(info.end)).append("]");
  if (info.begin > info.end) throw fail("data_offsets " + offsets_text + " have begin > end");
  if (info.end > buffer_size)
    throw fail("data_offsets " + offsets_text + " go past the end of the data buffer (" + std::to_string(buffer_size) +
               " bytes; is the file truncated?)");

  const std::size_t element_size = safe_dtype_size(info.dtype);
  const auto expected = byte_size(info.shape, element_size);
  if (!expected || *expected != info.end - info.begin)
    throw fail("shape " + format_shape(info.shape) + " of " + std::string(safe_dtype_name(info.dtype)) + " needs " +
               (expected ? std::to_string(*expected) : std::string("more than 2^64")) + " bytes but data_offsets " +
               offsets_text + " hold " + std::to_string(info.end - info.begin));
  return info;
}

/// Maps the whole file read-only; falls back to reading it when mmap is not possible.
std::shared_ptr<const std::byte> map_file(const std::filesystem::path& path, std::uint64_t& size) {
  require_regular_file(path);  // before open(): opening a FIFO blocks until a writer comes
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path.string(), std::string("cannot open: ") + std::strerror(errno));
  struct ::stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path.string(), "not a regular file");
  }
  size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const std::byte>(new std::byte[1], std::default_delete<std::byte[]>());
  }
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (address != MAP_FAILED) {
    return std::shared_ptr<const std::byte>(static_cast<const std::byte*>(address),
                                            [size](const std::byte* p) { ::munmap(const_cast<std::byte*>(p), size); });
  }
  std::ifstream in(path, std::ios::binary);
  std::shared_ptr<std::byte> buffer(new std::byte[size], std::default_delete<std::byte[]>());
  if (!in.read(reinterpret_cast<char*>(buffer.get()), static_cast<std::streamsize>(size)))
    throw InputError(path.string(), "read failed");
  return buffer;
}

}  // namespace

std::size_t safe_dtype_size(SafeDtype dtype) { return dtype_entry(dtype).size; }

std::string_view safe_dtype_name(SafeDtype dtype) { return dtype_entry(dtype).name; }

std::optional<SafeDtype> parse_safe_dtype(std::string_view name) {
  for (const auto& entry : kDtypes)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (const std::int64_t dim : shape) n *= dim;
  return n;
}

std::string format_shape(std::span<const std::int64_t> shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string file = path.string();
  SafetensorsFile result;
  result.path_ = path;
  result.mapping_ = map_file(path, result.file_size_);
  const std::byte* bytes = result.mapping_.get();

  if (result.file_size_ < 8)
    throw InputError(file, "truncated file: " + std::to_string(result.file_size_) +
                               " bytes, too short for the 8-byte header length");
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  if (header_size > result.file_size_ - 8)
    throw InputError(file, "header length " + std::to_string(header_size) + " goes past the end of the file (" +
                               std::to_string(result.file_size_) + " bytes; truncated or not a safetensors file?)");
  result.data_start_ = 8 + header_size;
  const std::uint64_t buffer_size = result.file_size_ - result.data_start_;

  nlohmann::json header;
  try {
    header = parse_bounded_json(reinterpret_cast<const char*>(bytes + 8), reinterpret_cast<const char*>(bytes + result.data_start_));
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file, std::string("bad JSON header: ") + e.what());
  }
  if (!header.is_object()) throw InputError(file, "bad JSON header: not a JSON object");

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw InputError(file, "__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) throw InputError(file, "__metadata__ entry '" + key + "' is not a string");
        result.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    result.tensors_.push_back(parse_tensor_entry(file, name, entry, buffer_size));
  }

  std::sort(result.tensors_.begin(), result.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const TensorInfo* furthest = nullptr;  // the non-empty tensor reaching furthest so far
  for (const TensorInfo& tensor : result.tensors_) {
    if (tensor.begin == tensor.end) continue;
    if (furthest != nullptr && tensor.begin < furthest->end)
      throw InputError(file, quoted(tensor.name) + " (bytes [" + std::to_string(tensor.begin) + ", " +
                                 std::to_string(tensor.end) + ")) overlaps " + quoted(furthest->name) + " (bytes [" +
                                 std::to_string(furthest->begin) + ", " + std::to_string(furthest->end) + "))");
    if (furthest == nullptr || tensor.end > furthest->end) furthest = &tensor;
  }
  return result;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  for (const TensorInfo& tensor : tensors_)
    if (tensor.name == name) return &tensor;
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& tensor) const {
  return {mapping_.get() + data_start_ + tensor.begin, static_cast<std::size_t>(tensor.end - tensor.begin)};
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    const std::string where = path.string() + ": " + quoted(tensor.name) + ": ";
    if (tensor.name.empty() || tensor.name == "__metadata__")
      throw ConfigError(where + "not a valid tensor name");
    if (!names.insert(tensor.name).second) throw ConfigError(where + "name given twice");
    if (std::any_of(tensor.shape.begin(), tensor.shape.end(), [](std::int64_t d) { return d < 0; }))
      throw ConfigError(where + "negative dimension in shape " + format_shape(tensor.shape));
    const auto expected = byte_size(tensor.shape, safe_dtype_size(tensor.dtype));
    if (!expected || *expected != tensor.bytes.size())
      throw ConfigError(where + "shape " + format_shape(tensor.shape) + " of " +
                        std::string(safe_dtype_name(tensor.dtype)) + " needs " +
                        (expected ? std::to_string(*expected) : std::string("more than 2^64")) + " bytes, " +
                        std::to_string(tensor.bytes.size()) + " given");
    header[tensor.name] = {{"dtype", safe_dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + tensor.bytes.size()}}};
    offset += tensor.bytes.size();
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  AtomicFileWriter writer(path, std::ios::binary);
  std::array<char, 8> length{};
  for (std::size_t i = 0; i < 8; ++i) length[i] = static_cast<char>((header_text.size() >> (8 * i)) & 0xFF);
  writer.stream().write(length.data(), 8);
  writer.stream().write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  for (const TensorToWrite& tensor : tensors)
    writer.stream().write(reinterpret_cast<const char*>(tensor.bytes.data()),
                          static_cast<std::streamsize>(tensor.bytes.size()));
  writer.commit();
}

}  // namespace xmc
