#include "engine/data/text_lines.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {

TEST(TextLines, RoundTripFlattensLineBreaks) {
  test::TempDir dir;
  write_text_lines(dir / "t.txt", {"first", "two\nlines", "", "caf\xC3\xA9"});
  EXPECT_EQ(read_text_lines(dir / "t.txt"), (std::vector<std::string>{"first", "two lines", "", "caf\xC3\xA9"}));
}

TEST(TextLines, NonUtf8TextIsReportedWithLineAndColumn) {
  test::TempDir dir;
  const auto path = test::write_file(dir / "t.txt", "fine\nalso fine\nLatin-1 caf\xE9\n");
  try {
    read_text_lines(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_EQ(std::string(e.what()), path.string() + ":3: text is not valid UTF-8 (bad byte at column 12)");
  }
}

TEST(TextLines, LineCountMismatchIsAnError) {
  test::TempDir dir;
  const auto path = test::write_file(dir / "t.txt", "a\nb\n");
  EXPECT_THROW(read_text_lines(path, 3), InputError);
  EXPECT_EQ(read_text_lines(path, 2).size(), 2u);
}

}  // namespace xmc
