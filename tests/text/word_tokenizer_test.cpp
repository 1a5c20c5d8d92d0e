#include "engine/text/word_tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/text/vocabulary.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

using Words = std::vector<std::string>;

// ---- WordTokenizer -----------------------------------------------------------------------------------

TEST(WordTokenizer, FoldsCaseAndSplitsOnNonAlphanumerics) {
  // Ü -> ü, ï, ö, é are letters and stay inside the word; ',' ' ' '!' separate; digits join letters.
  EXPECT_EQ(WordTokenizer::tokenize("\u00DCn\u00EFc\u00F6d\u00E9 TEXT, 42nd!"),
            (Words{"\u00FCn\u00EFc\u00F6d\u00E9", "text", "42nd"}));
}

TEST(WordTokenizer, ApostrophesHyphensAndSymbolsSeparate) {
  EXPECT_EQ(WordTokenizer::tokenize("don't e-mail a_b x+y"), (Words{"don", "t", "e", "mail", "a", "b", "x", "y"}));
  EXPECT_EQ(WordTokenizer::tokenize("  ,;!?  "), Words{});
  EXPECT_EQ(WordTokenizer::tokenize(""), Words{});
}

TEST(WordTokenizer, DecomposedAccentsMatchPrecomposedOnes) {
  // "U" + COMBINING DIAERESIS composes to "Ü", then folds to "ü".
  EXPECT_EQ(WordTokenizer::tokenize("U\u0308ber"), (Words{"\u00FCber"}));
  EXPECT_EQ(WordTokenizer::tokenize("U\u0308ber"), WordTokenizer::tokenize("\u00DCBER"));
}

TEST(WordTokenizer, FullCaseFoldingAndCompatibilityForms) {
  // ß folds to "ss"; Greek capital sigma to small sigma; fullwidth letters and digits to ASCII (NFKC).
  EXPECT_EQ(WordTokenizer::tokenize("Stra\u00DFe STRASSE"), (Words{"strasse", "strasse"}));
  EXPECT_EQ(WordTokenizer::tokenize("\u03A3\u039F\u03A6\u0399\u0391"), (Words{"\u03C3\u03BF\u03C6\u03B9\u03B1"}));
  EXPECT_EQ(WordTokenizer::tokenize("\uFF21\uFF22\uFF23\uFF11\uFF12"), (Words{"abc12"}));
}

TEST(WordTokenizer, CombiningMarksStayInsideTheirWord) {
  // Devanagari "hindi": HA, VOWEL SIGN I (Mc), NA, VIRAMA (Mn), DA, VOWEL SIGN II (Mc) is one word.
  const std::string hindi = "\u0939\u093F\u0928\u094D\u0926\u0940";
  EXPECT_EQ(WordTokenizer::tokenize(hindi + " text"), (Words{hindi, "text"}));
  // Ideographs are letters (Lo): a run of them is one word.
  EXPECT_EQ(WordTokenizer::tokenize("\u4E2D\u6587, ok"), (Words{"\u4E2D\u6587", "ok"}));
}

TEST(WordTokenizer, InvalidUtf8BytesSeparateWords) {
  EXPECT_EQ(WordTokenizer::tokenize("ab\xFF" "cd"), (Words{"ab", "cd"}));
  EXPECT_EQ(WordTokenizer::tokenize("\u00E9t\u00E9\xC3x"), (Words{"\u00E9t\u00E9", "x"}));
}

TEST(WordTokenizer, ForEachWordSeesTheSameWords) {
  Words seen;
  WordTokenizer::for_each_word("One two, THREE", [&](std::string_view w) { seen.emplace_back(w); });
  EXPECT_EQ(seen, (Words{"one", "two", "three"}));
}

// ---- Vocabulary --------------------------------------------------------------------------------------

// Counts by hand:  the: 1 + 2 = 3 (in 2 docs)   cat: 2 (2 docs)   dog: 2 (2 docs)   sat: 1   a: 1
const std::vector<std::string> kTexts = {"The cat sat", "the dog, THE cat", "a dog"};

TEST(Vocabulary, OrdersByCountThenAlphabetically) {
  const auto v = Vocabulary::build(kTexts);
  // [PAD] [UNK], then count 3: the; count 2: cat < dog; count 1: a < sat.
  ASSERT_EQ(v.size(), 7);
  const Words expected = {"[PAD]", "[UNK]", "the", "cat", "dog", "a", "sat"};
  for (std::int32_t id = 0; id < 7; ++id) EXPECT_EQ(v.word(id), expected[static_cast<std::size_t>(id)]) << id;
  EXPECT_EQ(v.id_of("the"), 2);
  EXPECT_EQ(v.id_of("sat"), 6);
  EXPECT_EQ(v.num_documents(), 3);
  EXPECT_EQ(v.document_frequency(v.id_of("the")), 2);  // "the" twice in text 1 counts once
  EXPECT_EQ(v.document_frequency(v.id_of("cat")), 2);
  EXPECT_EQ(v.document_frequency(v.id_of("a")), 1);
  EXPECT_EQ(v.document_frequency(Vocabulary::kPadId), 0);
}

TEST(Vocabulary, MinCountAndMaxSize) {
  VocabularyOptions min2;
  min2.min_count = 2;  // drops a, sat (count 1)
  const auto v2 = Vocabulary::build(kTexts, min2);
  ASSERT_EQ(v2.size(), 5);
  EXPECT_EQ(v2.word(4), "dog");
  EXPECT_EQ(v2.id_of("sat"), Vocabulary::kUnkId);

  VocabularyOptions cap;
  cap.max_size = 2;  // the, cat (+ [PAD], [UNK])
  const auto vc = Vocabulary::build(kTexts, cap);
  ASSERT_EQ(vc.size(), 4);
  EXPECT_EQ(vc.word(2), "the");
  EXPECT_EQ(vc.word(3), "cat");
  EXPECT_EQ(vc.id_of("dog"), Vocabulary::kUnkId);

  VocabularyOptions bad;
  bad.min_count = 0;
  EXPECT_THROW(Vocabulary::build(kTexts, bad), ConfigError);
  bad = VocabularyOptions{};
  bad.max_size = -1;
  EXPECT_THROW(Vocabulary::build(kTexts, bad), ConfigError);
}

TEST(Vocabulary, SmoothIdf) {
  const auto v = Vocabulary::build(kTexts);
  // N = 3 documents.
  // the (df 2): ln((1 + 3) / (1 + 2)) + 1 = ln(4/3) + 1 = 0.28768207245178090 + 1
  EXPECT_NEAR(v.idf(v.id_of("the")), 1.28768207245178090, 1e-12);
  // sat (df 1): ln(4 / 2) + 1 = ln 2 + 1 = 0.69314718055994531 + 1
  EXPECT_NEAR(v.idf(v.id_of("sat")), 1.69314718055994531, 1e-12);
  // [UNK] (df 0): ln(4 / 1) + 1 = 1.38629436111989061 + 1
  EXPECT_NEAR(v.idf(Vocabulary::kUnkId), 2.38629436111989061, 1e-12);
  const auto table = v.idf_table();
  ASSERT_EQ(table.size(), 7u);
  EXPECT_FLOAT_EQ(table[6], 1.69314718f);
}

TEST(Vocabulary, UnknownWordsMapToUnk) {
  const auto v = Vocabulary::build(kTexts);
  // the = 2, bird = unknown, sat = 6, a = 5
  EXPECT_EQ(v.encode("The bird sat, a bird"), (std::vector<std::int32_t>{2, 1, 6, 5, 1}));
  EXPECT_EQ(v.id_of("bird"), Vocabulary::kUnkId);
  EXPECT_EQ(v.id_of("[PAD]"), Vocabulary::kPadId);

  const TokenizedCorpus corpus = v.tokenize_corpus({"the cat", "", "zebra dog"});
  EXPECT_EQ(corpus.offsets, (std::vector<std::int64_t>{0, 2, 2, 4}));
  EXPECT_EQ(corpus.token_ids, (std::vector<std::int32_t>{2, 3, 1, 4}));
  EXPECT_EQ(corpus.size(), 3);
}

TEST(Vocabulary, IdsDoNotDependOnTextOrder) {
  const auto a = Vocabulary::build(kTexts);
  const auto b = Vocabulary::build({kTexts[2], kTexts[0], kTexts[1]});
  ASSERT_EQ(a.size(), b.size());
  for (std::int32_t id = 0; id < a.size(); ++id) EXPECT_EQ(a.word(id), b.word(id));
}

TEST(Vocabulary, SaveLoadRoundTrip) {
  test::TempDir dir;
  const auto v = Vocabulary::build(kTexts);
  v.save(dir / "vocab.tsv");
  EXPECT_EQ(test::read_file(dir / "vocab.tsv"),
            "xmc-vocabulary\t3\n[PAD]\t0\n[UNK]\t0\nthe\t2\ncat\t2\ndog\t2\na\t1\nsat\t1\n");
  const auto loaded = Vocabulary::load(dir / "vocab.tsv");
  ASSERT_EQ(loaded.size(), v.size());
  EXPECT_EQ(loaded.num_documents(), 3);
  for (std::int32_t id = 0; id < v.size(); ++id) {
    EXPECT_EQ(loaded.word(id), v.word(id));
    EXPECT_EQ(loaded.document_frequency(id), v.document_frequency(id));
    EXPECT_DOUBLE_EQ(loaded.idf(id), v.idf(id));
  }
  EXPECT_EQ(loaded.encode("dog cat zebra"), (std::vector<std::int32_t>{4, 3, 1}));
}

TEST(Vocabulary, MalformedFileNamesFileAndLine) {
  test::TempDir dir;
  const auto expect_error = [&](const std::string& content, std::size_t line, const std::string& reason) {
    const auto path = test::write_file(dir / "v.tsv", content);
    try {
      Vocabulary::load(path);
      ADD_FAILURE() << "expected an InputError for " << content;
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_EQ(std::string(e.what()), path.string() + ":" + std::to_string(line) + ": " + reason);
    }
  };
  const std::string head = "xmc-vocabulary\t3\n[PAD]\t0\n[UNK]\t0\n";
  expect_error(head + "the\t2\ncat\tmany\n", 5, "document frequency \"many\" is not a non-negative integer");
  expect_error(head + "the 2\n", 4, "expected \"WORD<TAB>DOCUMENT_FREQUENCY\"");
  expect_error(head + "the\t4\n", 4, "document frequency 4 exceeds the 3 documents of the header");
  expect_error(head + "the\t2\nthe\t1\n", 5, "word \"the\" already appeared on line 4");
  expect_error("vocab\t3\n", 1, "expected the header \"xmc-vocabulary<TAB>NUMBER_OF_DOCUMENTS\"");
  expect_error("xmc-vocabulary\t3\nthe\t2\n", 2, "expected \"[PAD]\" as the first word (id 0)");
  EXPECT_THROW(Vocabulary::load(dir / "missing.tsv"), InputError);
}

}  // namespace
}  // namespace xmc
