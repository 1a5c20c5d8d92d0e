// The tf-idf features of xrlinear: n-gram vocabulary, sublinear tf times smooth idf, L2 rows, its file.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/core/error.h"
#include "engine/text/tfidf_vectorizer.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

// Two texts: "a b a" and "b c". b is in both (idf ln(3/3) + 1 = 1), a and c in one (idf ln(3/2) + 1); every
// bigram is in one text only, so none is kept. "a b a" weighs a by (1 + ln 2)·idf(a) and b by 1, then /norm.
TEST(TfidfVectorizer, WeightsAHandWorkedExample) {
  const TfidfVectorizer v = TfidfVectorizer::fit({"a b a", "b c"}, {.ngrams = 2, .min_df = 1});
  ASSERT_EQ(v.num_features(), 3);
  EXPECT_EQ(v.feature(0), "b");  // most documents first, then byte order
  EXPECT_EQ(v.feature(1), "a");
  EXPECT_EQ(v.feature(2), "c");
  const double idf_a = std::log(1.5) + 1.0;
  EXPECT_NEAR(v.idf(0), 1.0, 1e-6);
  EXPECT_NEAR(v.idf(1), idf_a, 1e-6);
  const CsrMatrix x = v.transform({"A b a", "nothing known", "c"});
  ASSERT_EQ(x.rows, 3);
  ASSERT_EQ(x.row_size(0), 2);
  const double a = (1.0 + std::log(2.0)) * idf_a;
  const double norm = std::sqrt(a * a + 1.0);
  EXPECT_EQ(x.row_indices(0)[0], 0);
  EXPECT_NEAR(x.row_values(0)[0], 1.0 / norm, 1e-6);  // 0.38741
  EXPECT_EQ(x.row_indices(0)[1], 1);
  EXPECT_NEAR(x.row_values(0)[1], a / norm, 1e-6);  // 0.92191
  EXPECT_EQ(x.row_size(1), 0) << "a text with no known word is an empty row";
  ASSERT_EQ(x.row_size(2), 1);
  EXPECT_NEAR(x.row_values(2)[0], 1.0, 1e-6);
}

TEST(TfidfVectorizer, KeepsBigramsFoundInTwoTextsAndTokenizesInTextOrder) {
  const TfidfVectorizer v = TfidfVectorizer::fit({"x y", "x y z"}, {.ngrams = 2, .min_df = 1});
  // df 2: "x", "x y", "y" (byte order); df 1: "z". "y z" is in one text: dropped.
  ASSERT_EQ(v.num_features(), 4);
  EXPECT_EQ(v.feature(1), "x y");
  const TokenizedCorpus corpus = v.tokenize({"x y z"});
  const auto tokens = corpus.tokens(0);
  EXPECT_EQ(std::vector<std::int32_t>(tokens.begin(), tokens.end()), (std::vector<std::int32_t>{0, 2, 1, 3}));
  const TfidfVectorizer unigrams = TfidfVectorizer::fit({"x y", "x y z"}, {.ngrams = 1, .min_df = 2});
  EXPECT_EQ(unigrams.num_features(), 2) << "min_df 2 drops z";
  const TfidfVectorizer capped = TfidfVectorizer::fit({"x y", "x y z"}, {.ngrams = 2, .min_df = 1, .max_features = 2});
  EXPECT_EQ(capped.feature(0), "x");
  EXPECT_EQ(capped.feature(1), "x y");
}

TEST(TfidfVectorizer, OptionsOutOfRangeAreRefused) {
  EXPECT_THROW(TfidfVectorizer::fit({"a"}, {.ngrams = 0}), ConfigError);
  EXPECT_THROW(TfidfVectorizer::fit({"a"}, {.ngrams = 4}), ConfigError);
  EXPECT_THROW(TfidfVectorizer::fit({"a"}, {.ngrams = 1, .min_df = 0}), ConfigError);
  EXPECT_THROW(TfidfVectorizer::fit({"a"}, {.ngrams = 1, .min_df = 1, .max_features = -1}), ConfigError);
}

TEST(TfidfVectorizer, SavedAndLoadedGivesTheSameFeatures) {
  test::TempDir dir;
  const TfidfVectorizer v = TfidfVectorizer::fit({"red fox jumps", "red fox sleeps", "blue whale"}, {.ngrams = 2});
  v.save(dir / "tfidf.txt");
  const TfidfVectorizer loaded = TfidfVectorizer::load(dir / "tfidf.txt");
  ASSERT_EQ(loaded.num_features(), v.num_features());
  EXPECT_EQ(loaded.ngrams(), 2);
  const CsrMatrix a = v.transform({"red fox whale", "fox"});
  const CsrMatrix b = loaded.transform({"red fox whale", "fox"});
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values, b.values);
}

TEST(TfidfVectorizer, MalformedFilesNameTheLine) {
  test::TempDir dir;
  auto error_of = [&](const std::string& content) -> std::string {
    const auto path = test::write_file(dir / "tfidf.txt", content);
    try {
      TfidfVectorizer::load(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("xmc-vocabulary\t3\n").find(":1: expected the header"), std::string::npos);
  EXPECT_NE(error_of("xmc-tfidf\t9\t3\n").find(":1: expected the header"), std::string::npos);
  EXPECT_NE(error_of("xmc-tfidf\t1\t3\nred\t2\nfox\n").find(":3: expected \"NGRAM<TAB>DOCUMENT_FREQUENCY\""), std::string::npos);
  EXPECT_NE(error_of("xmc-tfidf\t1\t3\nred\t4\n").find(":2: document frequency \"4\""), std::string::npos);
  EXPECT_NE(error_of("xmc-tfidf\t1\t3\nred fox\t1\n").find(":2: \"red fox\" has more than the header's 1 words"), std::string::npos);
  EXPECT_NE(error_of("xmc-tfidf\t2\t3\nred\t1\nred\t1\n").find(":3: \"red\" already appeared on line 2"), std::string::npos);
  EXPECT_NE(error_of("xmc-tfidf\t2\t3\nred  fox\t1\n").find(":2: expected an n-gram"), std::string::npos);
}

}  // namespace
}  // namespace xmc
