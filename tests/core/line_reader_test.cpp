#include "engine/core/line_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"
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

namespace xmc {

// Special files are refused by name before they are opened: a FIFO would block the reader forever (no writer
// ever comes here), a directory is not data. Each refusal comes at once.
TEST(InputFiles, SpecialFilesAreRefusedByNameWithoutBlocking) {
  test::TempDir dir;
  const auto fifo = dir / "tst.raw.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto started = std::chrono::steady_clock::now();
  for (const auto& [path, reason] : std::vector<std::pair<std::filesystem::path, std::string>>{
           {fifo, "is a FIFO (named pipe), not a regular file"}, {dir.path(), "is a directory, not a file"}, {"/dev/null", "is a device, not a regular file"},
           {dir / "missing.txt", "no such file"}}) {
    try {
      LineReader reader(path);
      ADD_FAILURE() << path << " was opened";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path.string());
      EXPECT_EQ(std::string(e.what()), path.string() + ": " + reason);
    }
    EXPECT_THROW(require_regular_file(path), InputError) << path;
    EXPECT_FALSE(is_regular_file_path(path)) << path;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(is_regular_file_path(test::write_file(dir / "plain.txt", "x\n")));
}

}  // namespace xmc
