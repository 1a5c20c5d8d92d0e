#pragma once
// NumPy's .npy format for a 2-D float32 matrix (plain C++): the magic "\x93NUMPY", version 1.0, a header dict
// {'descr': '<f4', 'fortran_order': False, 'shape': (rows, cols), } padded with spaces to a multiple of 64
// bytes, then the values row by row, little-endian. numpy.load reads it as is.
#include <cstdint>
#include <filesystem>
#include <span>

namespace xmc {

/// Writes `values` ([rows × cols] row-major) to `path`, atomically (through a temporary file). Throws
/// ConfigError when values.size() != rows × cols; InputError naming the file when writing fails.
void write_npy_float32(const std::filesystem::path& path, std::int64_t rows, std::int64_t cols, std::span<const float> values);

}  // namespace xmc
