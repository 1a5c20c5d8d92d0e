#include "engine/core/line_reader.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {

TEST(LineReader, SplitsLinesKeepsEmptyOnesAndStripsCarriageReturns) {
  test::TempDir dir;
  const auto path = test::write_file(dir / "a.txt", "one\r\n\nthree\nlast-without-newline");
  LineReader reader(path);
  std::vector<std::string> lines;
  std::string_view line;
  while (reader.next(line)) lines.emplace_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "", "three", "last-without-newline"}));
  EXPECT_EQ(reader.line_number(), 4u);
}

TEST(LineReader, LinesLongerThanTheBufferSurvive) {
  test::TempDir dir;
  const std::string long_line(3'000'000, 'x');
  const auto path = test::write_file(dir / "long.txt", "short\n" + long_line + "\nend\n");
  LineReader reader(path);
  std::string_view line;
  ASSERT_TRUE(reader.next(line));
  ASSERT_TRUE(reader.next(line));
  EXPECT_EQ(line.size(), long_line.size());
  ASSERT_TRUE(reader.next(line));
  EXPECT_EQ(line, "end");
  EXPECT_FALSE(reader.next(line));
}

TEST(LineReader, MissingFileNamesThePath) {
  try {
    LineReader reader("/nonexistent/folder/x.txt");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/folder/x.txt: no such file");
  }
}

}  // namespace xmc
