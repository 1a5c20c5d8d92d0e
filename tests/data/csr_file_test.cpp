// Binary CSR feature files: written and read back exactly; every way a damaged file goes wrong is named.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "engine/data/csr_file.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

CsrMatrix sample() {
  CsrMatrix m;
  m.rows = 0;
  m.cols = 5;
  m.append_row(std::vector<std::int32_t>{0, 3}, std::vector<float>{0.6F, 0.8F});
  m.append_row(std::vector<std::int32_t>{}, std::vector<float>{});
  m.append_row(std::vector<std::int32_t>{4}, std::vector<float>{-1.5F});
  return m;
}

std::string bytes_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes, bool fix_checksum) {
  std::string out = bytes;
  if (fix_checksum) {
    const auto crc = static_cast<std::uint32_t>(::crc32_z(::crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(out.data()), out.size() - 4));
    std::memcpy(out.data() + out.size() - 4, &crc, 4);
  }
  std::ofstream(path, std::ios::binary) << out;
}

std::string error_of(const std::filesystem::path& path) {
  try {
    read_csr_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CsrFile, RoundTripsExactlyInTwelveBytesANonZero) {
  test::TempDir dir;
  const CsrMatrix m = sample();
  write_csr_file(dir / "m.csr", m);
  // 8 magic + 24 shape + 4 * 8 indptr + 3 * (4 + 4) entries + 4 checksum.
  EXPECT_EQ(std::filesystem::file_size(dir / "m.csr"), 8u + 24u + 32u + 24u + 4u);
  const CsrMatrix back = read_csr_file(dir / "m.csr");
  EXPECT_EQ(back.rows, 3);
  EXPECT_EQ(back.cols, 5);
  EXPECT_EQ(back.indptr, m.indptr);
  EXPECT_EQ(back.indices, m.indices);
  EXPECT_EQ(back.values, m.values);
  CsrMatrix bad = m;
  bad.indices[0] = 7;
  EXPECT_THROW(write_csr_file(dir / "bad.csr", bad), Error) << "a column outside the matrix is never written";
}

TEST(CsrFile, DamagedFilesAreRefusedByName) {
  test::TempDir dir;
  write_csr_file(dir / "m.csr", sample());
  const std::string good = bytes_of(dir / "m.csr");
  const auto path = dir / "d.csr";
  write_bytes(path, "not a matrix", false);
  EXPECT_NE(error_of(path).find("no \"XMCCSR1\" header"), std::string::npos);
  write_bytes(path, good.substr(0, good.size() - 9), false);
  EXPECT_NE(error_of(path).find("truncated or damaged"), std::string::npos);
  std::string flipped = good;
  flipped[good.size() - 6] ^= 0x10;  // a value's byte
  write_bytes(path, flipped, false);
  EXPECT_NE(error_of(path).find("checksum does not match"), std::string::npos);
  // Well-formed checksums over malformed contents: a column out of range, columns not ascending, a NaN.
  const std::size_t indices_at = 8 + 24 + 32;
  std::string column = good;
  const std::int32_t seven = 7;
  std::memcpy(column.data() + indices_at, &seven, 4);
  write_bytes(path, column, true);
  EXPECT_NE(error_of(path).find("row 0 has column 7 outside 0 .. 4"), std::string::npos) << error_of(path);
  std::string order = good;
  const std::int32_t three = 3, zero = 0;
  std::memcpy(order.data() + indices_at, &three, 4);
  std::memcpy(order.data() + indices_at + 4, &zero, 4);
  write_bytes(path, order, true);
  EXPECT_NE(error_of(path).find("columns of row 0 are not ascending"), std::string::npos) << error_of(path);
  std::string nan = good;
  const float not_a_number = std::nanf("");
  std::memcpy(nan.data() + indices_at + 12, &not_a_number, 4);
  write_bytes(path, nan, true);
  EXPECT_NE(error_of(path).find("not finite"), std::string::npos) << error_of(path);
  std::string shape = good;
  const std::int64_t huge = std::int64_t{1} << 50;
  std::memcpy(shape.data() + 8, &huge, 8);
  write_bytes(path, shape, true);
  EXPECT_NE(error_of(path).find("impossible shape"), std::string::npos) << error_of(path);
  // Offsets that run past the entries and back (found by the fuzzer: entries were read beyond the end).
  std::string offsets = "XMCCSR1\n";
  for (const std::int64_t v : {std::int64_t{2}, std::int64_t{1}, std::int64_t{0}, std::int64_t{0}, std::int64_t{4}, std::int64_t{0}})
    offsets.append(reinterpret_cast<const char*>(&v), 8);
  offsets.append(4, '\0');
  write_bytes(path, offsets, true);
  EXPECT_NE(error_of(path).find("row 1 ends before it starts"), std::string::npos) << error_of(path);
  EXPECT_THROW(read_csr_file(dir / "missing.csr"), InputError);
}

}  // namespace
}  // namespace xmc
