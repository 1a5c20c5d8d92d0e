#pragma once
// NumPy's .npy format (plain C++): the magic "\x93NUMPY", a version (1.0: 2-byte header length; 2.0, 3.0: 4-byte),
// a header dict {'descr': '<f4', 'fortran_order': False, 'shape': (rows, cols), } padded with spaces to a multiple
// of 64 bytes, then the values in C order, little-endian. numpy.save writes it, numpy.load reads what we write.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace xmc {

/// What an .npy header says: the element type as NumPy spells it ("<f4", "<f2", "<i4", ...), the shape, and where
/// the values begin.
struct NpyHeader {
  std::string descr;
  std::vector<std::int64_t> shape;
  std::uint64_t data_offset = 0;
  std::uint64_t element_count() const;
};

/// Reads and checks the header of `path`: the magic, a known version, a dict with exactly 'descr', 'fortran_order'
/// and 'shape', fortran_order False, a shape of non-negative sizes. It does not check the file's length (the
/// caller knows the element size). Throws InputError naming the file and what is wrong.
NpyHeader read_npy_header(const std::filesystem::path& path);
/// The same from the first bytes of a file (at least the whole header); `source` names it in errors.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& source);

/// Writes an array of `descr` elements (of `element_size` bytes each) with `shape`, C order, atomically. Throws
/// ConfigError when bytes.size() does not match; InputError naming the file when writing fails.
void write_npy(const std::filesystem::path& path, const std::string& descr, std::size_t element_size, const std::vector<std::int64_t>& shape,
               std::span<const std::byte> bytes);
/// Writes `values` ([rows × cols] row-major) as '<f4'.
void write_npy_float32(const std::filesystem::path& path, std::int64_t rows, std::int64_t cols, std::span<const float> values);

}  // namespace xmc
