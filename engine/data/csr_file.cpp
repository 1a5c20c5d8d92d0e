#include "engine/data/csr_file.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/crc32.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"

static_assert(std::endian::native == std::endian::little, "CSR files are little-endian");

namespace xmc {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'C', 'C', 'S', 'R', '1', '\n'};
constexpr std::uint64_t kHeaderBytes = sizeof(kMagic) + 3 * sizeof(std::int64_t);

/// Why `m` is not a well-formed CSR matrix, or "" when it is.
std::string malformation(const CsrMatrix& m) {
  if (m.rows < 0 || m.cols < 0) return "negative shape " + std::to_string(m.rows) + " x " + std::to_string(m.cols);
  if (static_cast<std::int64_t>(m.indptr.size()) != m.rows + 1) return "indptr has " + std::to_string(m.indptr.size()) + " entries for " + std::to_string(m.rows) + " rows";
  if (m.indptr.front() != 0 || m.indptr.back() != m.nnz() || m.values.size() != m.indices.size())
    return "indptr does not run from 0 to the " + std::to_string(m.nnz()) + " non-zeros";
  // Offsets first, all of them: once they never decrease from 0 to nnz, every row's entries are in range.
  for (std::int64_t r = 0; r < m.rows; ++r)
    if (m.indptr[static_cast<std::size_t>(r) + 1] < m.indptr[static_cast<std::size_t>(r)]) return "row " + std::to_string(r) + " ends before it starts";
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t k = m.indptr[static_cast<std::size_t>(r)]; k < m.indptr[static_cast<std::size_t>(r) + 1]; ++k) {
      const std::int32_t c = m.indices[static_cast<std::size_t>(k)];
      if (c < 0 || c >= m.cols) return "row " + std::to_string(r) + " has column " + std::to_string(c) + " outside 0 .. " + std::to_string(m.cols - 1);
      if (k > m.indptr[static_cast<std::size_t>(r)] && c <= m.indices[static_cast<std::size_t>(k) - 1])
        return "the columns of row " + std::to_string(r) + " are not ascending";
      if (!std::isfinite(m.values[static_cast<std::size_t>(k)])) return "row " + std::to_string(r) + " has a value that is not finite";
    }
  }
  return "";
}

template <class T>
void put(std::ostream& out, std::uint32_t& crc, const T* data, std::size_t count) {
  const auto* bytes = reinterpret_cast<const char*>(data);
  out.write(bytes, static_cast<std::streamsize>(count * sizeof(T)));
  crc = crc32_update(crc, bytes, count * sizeof(T));
}

}  // namespace

void write_csr_file(const std::filesystem::path& path, const CsrMatrix& m) {
  if (const std::string why = malformation(m); !why.empty()) throw Error("write " + path.string() + ": " + why);
  AtomicFileWriter writer(path, std::ios::out | std::ios::binary);
  std::ostream& out = writer.stream();
  std::uint32_t crc = 0;
  const std::int64_t shape[3] = {m.rows, m.cols, m.nnz()};
  put(out, crc, kMagic, sizeof(kMagic));
  put(out, crc, shape, 3);
  put(out, crc, m.indptr.data(), m.indptr.size());
  put(out, crc, m.indices.data(), m.indices.size());
  put(out, crc, m.values.data(), m.values.size());
  out.write(reinterpret_cast<const char*>(&crc), sizeof(crc));
  writer.commit();
}

CsrMatrix read_csr_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(file, "cannot be opened");
  const std::uint64_t size = std::filesystem::file_size(path);
  char magic[sizeof(kMagic)] = {};
  std::int64_t shape[3] = {};
  if (size < kHeaderBytes + sizeof(std::uint32_t) || !in.read(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0 ||
      !in.read(reinterpret_cast<char*>(shape), sizeof(shape)))
    throw InputError(file, "is not a sparse matrix file written by xmc (no \"XMCCSR1\" header)");
  const std::int64_t rows = shape[0], cols = shape[1], nnz = shape[2];
  if (rows < 0 || cols < 0 || nnz < 0 || cols > INT32_MAX || rows > (std::int64_t{1} << 40) || nnz > (std::int64_t{1} << 40))
    throw InputError(file, "header gives an impossible shape: " + std::to_string(rows) + " x " + std::to_string(cols) + ", " + std::to_string(nnz) + " non-zeros");
  const std::uint64_t expected = kHeaderBytes + static_cast<std::uint64_t>(rows + 1) * 8 + static_cast<std::uint64_t>(nnz) * 8 + sizeof(std::uint32_t);
  if (size != expected)
    throw InputError(file, "is " + std::to_string(size) + " bytes, but its header (" + std::to_string(rows) + " x " + std::to_string(cols) + ", " +
                               std::to_string(nnz) + " non-zeros) needs " + std::to_string(expected) + ": truncated or damaged");
  CsrMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.indptr.resize(static_cast<std::size_t>(rows) + 1);
  m.indices.resize(static_cast<std::size_t>(nnz));
  m.values.resize(static_cast<std::size_t>(nnz));
  std::uint32_t stored = 0;
  in.read(reinterpret_cast<char*>(m.indptr.data()), static_cast<std::streamsize>(m.indptr.size() * 8));
  in.read(reinterpret_cast<char*>(m.indices.data()), static_cast<std::streamsize>(m.indices.size() * 4));
  in.read(reinterpret_cast<char*>(m.values.data()), static_cast<std::streamsize>(m.values.size() * 4));
  in.read(reinterpret_cast<char*>(&stored), sizeof(stored));
  if (!in) throw InputError(file, "could not be read to its end");
  std::uint32_t crc = crc32_update(0, kMagic, sizeof(kMagic));
  crc = crc32_update(crc, shape, sizeof(shape));
  crc = crc32_update(crc, m.indptr.data(), m.indptr.size() * 8);
  crc = crc32_update(crc, m.indices.data(), m.indices.size() * 4);
  crc = crc32_update(crc, m.values.data(), m.values.size() * 4);
  if (crc != stored) throw InputError(file, "checksum does not match its contents: the file is damaged");
  if (const std::string why = malformation(m); !why.empty()) throw InputError(file, why);
  return m;
}

}  // namespace xmc
