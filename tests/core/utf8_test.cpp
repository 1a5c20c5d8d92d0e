#include "engine/core/utf8.h"

#include <gtest/gtest.h>

namespace xmc {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // café € 😀
  EXPECT_TRUE(is_valid_utf8(""));
}

TEST(Utf8, ReportsOffsetOfFirstBadByte) {
  EXPECT_EQ(find_invalid_utf8("ab\xFF" "cd"), 2u);              // never valid
  EXPECT_EQ(find_invalid_utf8("ab\xC3"), 2u);                   // truncated sequence
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);                 // overlong '/'
  EXPECT_EQ(find_invalid_utf8("x\xED\xA0\x80"), 1u);            // UTF-16 surrogate
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);         // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("latin-1 caf\xE9"), 11u);         // Latin-1 é
}

TEST(Utf8, SingleLineReplacesBreaksAndTrims) {
  EXPECT_EQ(to_single_line("  a\nb\tc\r\n "), "a b c");
  EXPECT_EQ(to_single_line("\n\n"), "");
}

}  // namespace xmc
