// FloatRowFile: rows read back as written, by any range; the file has no name in its folder; reads outside the rows,
// a folder that does not exist and a write past the file-size limit are errors that say so.
#include "engine/core/float_row_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/file_size_limit.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

/// Row r of width w: r + c / 8 in column c (exact in float).
std::vector<float> rows_from(std::int64_t first, std::int64_t count, std::int64_t width) {
  std::vector<float> out;
  for (std::int64_t r = first; r < first + count; ++r)
    for (std::int64_t c = 0; c < width; ++c) out.push_back(static_cast<float>(r) + static_cast<float>(c) / 8.0F);
  return out;
}

TEST(FloatRowFile, RowsReadBackAsWrittenAndTheFileHasNoName) {
  test::TempDir dir;
  FloatRowFile file(dir.path(), 3);
  file.append(rows_from(0, 5, 3).data(), 5);
  file.append(rows_from(5, 2, 3).data(), 2);
  EXPECT_EQ(file.rows(), 7);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // nothing left behind by a killed process

  std::vector<float> got(4 * 3);
  file.read(2, 6, got.data());  // across the two appends
  EXPECT_EQ(got, rows_from(2, 4, 3));
  std::vector<float> one(3);
  file.read(6, 7, one.data());
  EXPECT_EQ(one, (std::vector<float>{6.0F, 6.125F, 6.25F}));
  file.read(3, 3, nullptr);  // an empty range reads nothing
}

TEST(FloatRowFile, AReadOutsideTheRowsWrittenSaysWhichRange) {
  test::TempDir dir;
  FloatRowFile file(dir.path(), 2);
  file.append(rows_from(0, 3, 2).data(), 3);
  std::vector<float> out(8);
  try {
    file.read(2, 4, out.data());
    ADD_FAILURE() << "read past the rows";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows [2, 4) asked of 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(file.read(-1, 1, out.data()), Error);
}

TEST(FloatRowFile, AFolderThatDoesNotExistIsNamed) {
  test::TempDir dir;
  try {
    FloatRowFile file(dir / "missing", 4);
    ADD_FAILURE() << "made a file in a folder that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "missing").string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(FloatRowFile(dir.path(), 0), Error);
}

TEST(FloatRowFile, AWritePastTheFileSizeLimitSaysSoAndKeepsTheRowsBefore) {
  test::TempDir dir;
  report_file_size_limit_as_write_errors();  // EFBIG instead of SIGXFSZ
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  FloatRowFile file(dir.path(), 64);  // 256 bytes a row
  file.append(rows_from(0, 4, 64).data(), 4);
  rlimit limited = before;
  limited.rlim_cur = 2048;  // 8 rows
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string what;
  try {
    file.append(rows_from(4, 10, 64).data(), 10);
  } catch (const Error& e) {
    what = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &before), 0);
  EXPECT_NE(what.find("ulimit -f"), std::string::npos) << what;
  EXPECT_NE(what.find(dir.path().string()), std::string::npos) << what;
  EXPECT_EQ(file.rows(), 4);
  std::vector<float> got(4 * 64);
  file.read(0, 4, got.data());
  EXPECT_EQ(got, rows_from(0, 4, 64));
}

}  // namespace
}  // namespace xmc
