#pragma once
// Reader and writer of the safetensors format (Hugging Face model weights), plain C++ (no torch).
//
// Layout: an 8-byte little-endian u64 N, then N bytes of JSON header
//   {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, ..., "__metadata__": {str: str}}
// then the data buffer; offsets are relative to the start of that buffer, tensors are row-major and
// little-endian. The reader validates everything up front (dtype, shape × dtype size = END − BEGIN, offsets
// inside the buffer, no two tensors overlapping; gaps are allowed) and throws xmc::InputError naming the file
// and the tensor. Data is memory-mapped, so opening a 400 MB model costs no copy.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace xmc {

enum class SafeDtype { F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL };

/// Bytes per element: 4 for F32, 2 for F16/BF16, 1 for BOOL, ...
std::size_t safe_dtype_size(SafeDtype dtype);
/// The header spelling: "F32", "BF16", "BOOL", ...
std::string_view safe_dtype_name(SafeDtype dtype);
/// The dtype spelled `name` in a header; nullopt for a dtype this reader does not support.
std::optional<SafeDtype> parse_safe_dtype(std::string_view name);

/// One tensor of a safetensors file; [begin, end) are byte offsets into the data buffer.
struct TensorInfo {
  std::string name;
  SafeDtype dtype = SafeDtype::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  std::int64_t numel() const;  ///< product of shape (1 for a scalar)
};

/// "[2, 3]", for error messages.
std::string format_shape(std::span<const std::int64_t> shape);

/// An opened, validated safetensors file. Cheap to copy: copies share the mapping.
class SafetensorsFile {
 public:
  /// Maps and validates `path`; throws InputError("PATH", reason naming the tensor) on any defect.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  /// All tensors, ordered by their begin offset.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The tensor called `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;
  /// The raw little-endian bytes of `tensor` (end − begin bytes). Not aligned: copy before reinterpreting.
  std::span<const std::byte> data(const TensorInfo& tensor) const;
  /// The optional "__metadata__" entries (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;

  std::filesystem::path path_;
  std::shared_ptr<const std::byte> mapping_;  ///< the whole file; unmapped when the last copy goes
  std::uint64_t file_size_ = 0;
  std::uint64_t data_start_ = 0;  ///< 8 + N
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// One tensor to write; `bytes` (row-major, little-endian) must stay alive during write_safetensors().
struct TensorToWrite {
  std::string name;
  SafeDtype dtype = SafeDtype::F32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;  ///< numel × safe_dtype_size(dtype) bytes
};

/// Writes `tensors` (in the given order, packed back to back) and `metadata` to `path`, atomically (through
/// a temporary file). The header is padded with spaces to a multiple of 8 bytes, as Hugging Face does.
/// Throws ConfigError on a size mismatch, a duplicate or reserved name; InputError when writing fails.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace xmc
