#include "engine/data/xc_sparse_file.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

std::string error_of(const std::filesystem::path& path) {
  try {
    read_xc_sparse(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(XcSparseFile, ReadsRowsCommentsEmptyRowsAndUnsortedEntries) {
  test::TempDir dir;
  const auto path = test::write_file(dir / "y.txt",
                                     "# a comment before the header\n"
                                     "4 10\n"
                                     "3:1 1:0.5\n"
                                     "\n"
                                     "# comment between rows\n"
                                     "9:2.25\t0:1\n"
                                     "5:1\n");
  const CsrMatrix m = read_xc_sparse(path);
  EXPECT_EQ(m.rows, 4);
  EXPECT_EQ(m.cols, 10);
  EXPECT_EQ(m.indptr, (std::vector<std::int64_t>{0, 2, 2, 4, 5}));
  EXPECT_EQ(m.indices, (std::vector<std::int32_t>{1, 3, 0, 9, 5}));
  EXPECT_EQ(m.values, (std::vector<float>{0.5f, 1.0f, 1.0f, 2.25f, 1.0f}));
  EXPECT_EQ(m.column_counts(), (std::vector<std::int64_t>{1, 1, 0, 1, 0, 1, 0, 0, 0, 1}));
}

TEST(XcSparseFile, TrailingEmptyRowsCount) {
  test::TempDir dir;
  // Two rows, the second one empty: the file ends with an empty line.
  const CsrMatrix m = read_xc_sparse(test::write_file(dir / "y.txt", "2 3\n1:1\n\n"));
  EXPECT_EQ(m.rows, 2);
  EXPECT_EQ(m.row_size(1), 0);
}

TEST(XcSparseFile, WriteThenReadGivesTheSameMatrix) {
  test::TempDir dir;
  CsrMatrix m;
  m.cols = 7;
  m.append_row(std::vector<std::int32_t>{0, 6}, std::vector<float>{1.0f, 0.125f});
  m.append_row(std::vector<std::int32_t>{}, std::vector<float>{});
  m.append_row(std::vector<std::int32_t>{2}, std::vector<float>{-3.5f});
  write_xc_sparse(dir / "m.txt", m);
  EXPECT_EQ(test::read_file(dir / "m.txt"), "3 7\n0:1 6:0.125\n\n2:-3.5\n");
  const CsrMatrix back = read_xc_sparse(dir / "m.txt");
  EXPECT_EQ(back.indptr, m.indptr);
  EXPECT_EQ(back.indices, m.indices);
  EXPECT_EQ(back.values, m.values);
}

TEST(XcSparseFile, ErrorsNameFileLineAndValue) {
  test::TempDir dir;
  const auto p = [&](const std::string& name, const std::string& content) { return test::write_file(dir / name, content); };
  const auto out_of_range = p("range.txt", "2 5\n1:1\n0:1 5:1\n");
  EXPECT_EQ(error_of(out_of_range), out_of_range.string() + ":3: index 5 is out of range: the header declares 5 columns (valid 0..4)");
  const auto fewer = p("fewer.txt", "3 5\n1:1\n2:1\n");
  EXPECT_EQ(error_of(fewer), fewer.string() + ": the header says 3 rows but the file has 2");
  const auto huge = p("huge.txt", "99999999999999 6\n1:1\n");  // ran out of memory reserving the header's rows
  EXPECT_EQ(error_of(huge), huge.string() + ": the header says 99999999999999 rows but the file has 1");
  const auto more = p("more.txt", "1 5\n1:1\n2:1\n");
  EXPECT_EQ(error_of(more), more.string() + ":3: more rows than the 1 the header declares");
  EXPECT_NE(error_of(p("header.txt", "3\n1:1\n")).find("header.txt:1: expected the header 'ROWS COLS'"), std::string::npos);
  EXPECT_NE(error_of(p("token.txt", "1 5\n1:1 abc\n")).find("token.txt:2: expected 'index:value', got 'abc'"), std::string::npos);
  EXPECT_NE(error_of(p("value.txt", "1 5\n1:x\n")).find("value.txt:2: the value in '1:x' is not a number"), std::string::npos);
  EXPECT_NE(error_of(p("nan.txt", "1 5\n1:nan\n")).find("nan.txt:2: the value in '1:nan' is not finite"), std::string::npos);
  EXPECT_NE(error_of(p("dup.txt", "1 5\n1:1 1:2\n")).find("dup.txt:2: index 1 appears twice in this row"), std::string::npos);
  EXPECT_NE(error_of(p("neg.txt", "1 5\n-1:1\n")).find("neg.txt:2: index -1 is out of range"), std::string::npos);
  EXPECT_NE(error_of(p("empty.txt", "")).find("the file is empty"), std::string::npos);
  EXPECT_EQ(error_of(dir / "missing.txt"), (dir / "missing.txt").string() + ": no such file");
}

TEST(XcSparseFile, StreamingReaderYieldsRowsInOrder) {
  test::TempDir dir;
  XcSparseReader reader(test::write_file(dir / "y.txt", "3 4\n3:1\n\n0:1 2:1\n"));
  EXPECT_EQ(reader.rows(), 3);
  EXPECT_EQ(reader.cols(), 4);
  std::vector<std::int32_t> idx;
  std::vector<float> val;
  std::vector<std::vector<std::int32_t>> rows;
  while (reader.next(idx, val)) rows.push_back(idx);
  EXPECT_EQ(rows, (std::vector<std::vector<std::int32_t>>{{3}, {}, {0, 2}}));
}

}  // namespace xmc
