// GloVe-style word vectors ("word v1 v2 ..."), as the bow encoder's encoder.path reads them.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/error.h"
#include "engine/text/word_vectors.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

TEST(WordVectors, ReadsTheWantedWordsAndZeroesTheRest) {
  test::TempDir dir;
  const auto path = test::write_file(dir / "v.txt", "dog 0.5 -1\ncat 2 3e-1\nbird 1 1\n");
  const WordVectorTable t = load_glove_vectors(path, {"cat", "fish", "dog"});
  ASSERT_EQ(t.dim, 2);
  EXPECT_EQ(t.found, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(t.vectors, (std::vector<float>{2.0f, 0.3f, 0.0f, 0.0f, 0.5f, -1.0f}));
}

TEST(WordVectors, BadComponentsNameFileLineAndText) {
  test::TempDir dir;
  auto error_of = [&](const std::string& content) -> std::string {
    const auto path = test::write_file(dir / "v.txt", content);
    try {
      load_glove_vectors(path, {"dog", "cat"});
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string file = (dir / "v.txt").string();
  // "0.1-0.1" once read as two numbers, giving the row a component too many.
  EXPECT_EQ(error_of("dog 0.1 0.2\ncat 0.1-0.1\n"), file + ":2: a vector component is not a number: \"0.1-0.1\"");
  EXPECT_EQ(error_of("dog 0.1 x\n"), file + ":1: a vector component is not a number: \"x\"");
  EXPECT_EQ(error_of("dog 0.1 0.2\ncat 0.1\n"), file + ":2: vector has 1 components, expected 2");
}

}  // namespace
}  // namespace xmc
