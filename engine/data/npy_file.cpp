#include "engine/data/npy_file.h"

#include <bit>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"

static_assert(std::endian::native == std::endian::little, ".npy '<f4' data is little-endian");

namespace xmc {

void write_npy_float32(const std::filesystem::path& path, std::int64_t rows, std::int64_t cols, std::span<const float> values) {
  if (rows < 0 || cols < 0 || static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) != values.size())
    throw ConfigError("write_npy_float32: " + std::to_string(values.size()) + " values do not make a " + std::to_string(rows) + " x " +
                      std::to_string(cols) + " matrix");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  AtomicFileWriter writer(path, std::ios::out | std::ios::binary);
  std::ostream& out = writer.stream();
  out.write("\x93NUMPY\x01\x00", 8);
  const auto length = static_cast<std::uint16_t>(header.size());
  const char length_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  writer.commit();
}

}  // namespace xmc
