#include "engine/text/wordpiece_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

using Pieces = std::vector<std::string>;
using Ids = std::vector<std::int32_t>;

// A hand-written vocabulary; the id of a token is its index here (vocab.txt: line number - 1).
const std::vector<std::string> kVocab = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",                            //  0 -  4
    "un", "##aff", "##able", "want", "##want", "##ed", "wa", "runn", "##ing",  //  5 - 13
    "hello", "Hello", "world", ",", "!",                                     // 14 - 18
    "\u4E2D", "\u6587", "the", "a", "##a",                                   // 19 - 23 (中, 文)
    "\u043F\u0440\u0438", "##\u0432\u0435\u0442",                            // 24 - 25 (при, ##вет)
    "[", "]"};                                                               // 26 - 27

std::string vocab_txt(const std::vector<std::string>& tokens) {
  std::string text;
  for (const auto& t : tokens) text += t + "\n";
  return text;
}

// The same vocabulary as a tokenizer.json of BertTokenizerFast.
nlohmann::json tokenizer_json(const std::vector<std::string>& tokens) {
  nlohmann::json vocab = nlohmann::json::object();
  for (std::size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  nlohmann::json added = nlohmann::json::array();
  for (int id = 0; id < 5; ++id)
    added.push_back({{"id", id}, {"content", tokens[static_cast<std::size_t>(id)]}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
}

class WordPieceTest : public ::testing::Test {
 protected:
  void SetUp() override { vocab_path_ = test::write_file(dir_ / "vocab.txt", vocab_txt(kVocab)); }
  WordPieceTokenizer load(WordPieceOptions options = {}) const { return WordPieceTokenizer::from_file(vocab_path_, options); }

  test::TempDir dir_;
  std::filesystem::path vocab_path_;
};

TEST_F(WordPieceTest, ClassicBertExamples) {
  const auto t = load();
  EXPECT_EQ(t.tokenize("unaffable"), (Pieces{"un", "##aff", "##able"}));
  // transformers' test_full_tokenizer: lower-cased, é -> e, ',' split off.
  EXPECT_EQ(t.tokenize("UNwant\u00E9d,running"), (Pieces{"un", "##want", "##ed", ",", "runn", "##ing"}));
  EXPECT_EQ(t.encode("unaffable"), (Ids{2, 5, 6, 7, 3}));  // [CLS] un ##aff ##able [SEP]
  EXPECT_EQ(t.vocab_size(), 28);
  EXPECT_EQ(t.pad_id(), 0);
  EXPECT_EQ(t.unk_id(), 1);
  EXPECT_EQ(t.cls_id(), 2);
  EXPECT_EQ(t.sep_id(), 3);
  EXPECT_EQ(t.max_len(), 128);
  EXPECT_TRUE(t.lowercase());
  EXPECT_TRUE(t.strip_accents());
}

TEST_F(WordPieceTest, AccentsStrippedAndNonAsciiLowerCased) {
  const auto t = load();
  EXPECT_EQ(t.tokenize("H\u00E9llo"), (Pieces{"hello"}));
  EXPECT_EQ(t.tokenize("He\u0301llo"), (Pieces{"hello"}));  // decomposed é: the mark (Mn) is dropped
  // ПРИВЕТ -> привет -> при ##вет (multi-byte pieces)
  EXPECT_EQ(t.tokenize("\u041F\u0420\u0418\u0412\u0415\u0422"), (Pieces{"\u043F\u0440\u0438", "##\u0432\u0435\u0442"}));
}

TEST_F(WordPieceTest, PunctuationIsSplitOff) {
  const auto t = load();
  EXPECT_EQ(t.tokenize("hello,world!"), (Pieces{"hello", ",", "world", "!"}));
  EXPECT_EQ(t.tokenize("[hello]"), (Pieces{"[", "hello", "]"}));
  // '$' and '`' are punctuation by the ASCII rule, '¿' (Po) by its category; none is in the vocabulary.
  EXPECT_EQ(t.tokenize("$hello`\u00BFworld"), (Pieces{"[UNK]", "hello", "[UNK]", "[UNK]", "world"}));
}

TEST_F(WordPieceTest, CjkIdeographsAreSeparated) {
  const auto t = load();
  EXPECT_EQ(t.tokenize("a\u4E2D\u6587the"), (Pieces{"a", "\u4E2D", "\u6587", "the"}));
}

TEST_F(WordPieceTest, ControlCharactersDroppedAndWhitespaceSplits) {
  const auto t = load();
  // U+0001 (Cc) and U+200B ZERO WIDTH SPACE (Cf) are dropped, so the words join up again.
  EXPECT_EQ(t.tokenize("hel\x01lo wor\u200Bld"), (Pieces{"hello", "world"}));
  // tab, newline, NO-BREAK SPACE and IDEOGRAPHIC SPACE separate words.
  EXPECT_EQ(t.tokenize("hello\tworld\nhello\u00A0world\u3000the"), (Pieces{"hello", "world", "hello", "world", "the"}));
  EXPECT_EQ(t.tokenize(" \t\n "), Pieces{});
}

TEST_F(WordPieceTest, UnknownWordsBecomeUnk) {
  const auto t = load();
  EXPECT_EQ(t.tokenize("hello xyz"), (Pieces{"hello", "[UNK]"}));
  // "un ##aff ##able" matches but "x" cannot continue it: the whole word is [UNK], not a partial match.
  EXPECT_EQ(t.tokenize("unaffablex the"), (Pieces{"[UNK]", "the"}));
  // "a" then "##a" x 99 covers 100 characters; 101 characters exceed max_input_chars_per_word.
  const auto pieces = t.tokenize(std::string(100, 'a'));
  ASSERT_EQ(pieces.size(), 100u);
  EXPECT_EQ(pieces.front(), "a");
  EXPECT_EQ(pieces.back(), "##a");
  EXPECT_EQ(t.tokenize(std::string(101, 'a')), (Pieces{"[UNK]"}));
}

TEST_F(WordPieceTest, LiteralSpecialTokensStayWhole) {
  const auto t = load();
  EXPECT_EQ(t.encode("hello[SEP]world"), (Ids{2, 14, 3, 16, 3}));
  EXPECT_EQ(t.tokenize("[MASK] [mask]"), (Pieces{"[MASK]", "[", "[UNK]", "]"}));
}

TEST_F(WordPieceTest, MaxLenTruncationKeepsClsAndSep) {
  WordPieceOptions five;
  five.max_len = 5;
  // [CLS] un ##aff ##able [SEP]: the three pieces fit exactly, "hello world" is cut.
  EXPECT_EQ(load(five).encode("unaffable hello world"), (Ids{2, 5, 6, 7, 3}));
  WordPieceOptions four;
  four.max_len = 4;  // a word may be cut between its pieces, as transformers does
  EXPECT_EQ(load(four).encode("unaffable hello world"), (Ids{2, 5, 6, 3}));
  WordPieceOptions two;
  two.max_len = 2;
  EXPECT_EQ(load(two).encode("hello"), (Ids{2, 3}));
  EXPECT_EQ(load().encode(""), (Ids{2, 3}));
  WordPieceOptions one;
  one.max_len = 1;
  EXPECT_THROW(load(one), ConfigError);
}

TEST_F(WordPieceTest, EncodeCorpusIsCsrOfEncode) {
  WordPieceOptions four;
  four.max_len = 4;
  const auto t = load(four);
  const auto corpus = t.encode_corpus({"hello world", "", "unaffable hello"});
  EXPECT_EQ(corpus.offsets, (std::vector<std::int64_t>{0, 4, 6, 10}));
  EXPECT_EQ(corpus.token_ids, (Ids{2, 14, 16, 3, 2, 3, 2, 5, 6, 3}));
}

TEST_F(WordPieceTest, LowercaseFalseKeepsCaseAndAccents) {
  WordPieceOptions cased;
  cased.lowercase = false;
  const auto t = load(cased);
  EXPECT_FALSE(t.lowercase());
  EXPECT_FALSE(t.strip_accents());  // strip_accents follows lowercase when no file sets it
  EXPECT_EQ(t.tokenize("Hello hello"), (Pieces{"Hello", "hello"}));
  EXPECT_EQ(t.tokenize("H\u00E9llo"), (Pieces{"[UNK]"}));
  EXPECT_EQ(load().tokenize("Hello hello"), (Pieces{"hello", "hello"}));
}

TEST_F(WordPieceTest, TokenizerJsonMatchesVocabTxt) {
  const auto json_path = test::write_file(dir_ / "tokenizer.json", tokenizer_json(kVocab).dump(2));
  const auto from_json = WordPieceTokenizer::from_file(json_path);
  const auto from_txt = load();
  EXPECT_EQ(from_json.vocab_size(), from_txt.vocab_size());
  EXPECT_EQ(from_json.cls_id(), 2);
  EXPECT_EQ(from_json.sep_id(), 3);
  for (const std::string text : {"unaffable", "UNwant\u00E9d,running", "hello,world!", "a\u4E2D\u6587the",
                                 "hel\x01lo xyz [SEP] \u041F\u0420\u0418\u0412\u0415\u0422", ""})
    EXPECT_EQ(from_json.encode(text), from_txt.encode(text)) << text;

  WordPieceOptions cased;
  cased.lowercase = false;
  EXPECT_EQ(WordPieceTokenizer::from_file(json_path, cased).tokenize("Hello"), (Pieces{"Hello"}));
}

// One id of 2^31 - 2 in a small file once sized the token table to two billion entries.
TEST_F(WordPieceTest, TokenizerJsonIdsBeyondTheListedTokensAreRefusedByName) {
  for (const std::int64_t id : {std::int64_t{2147483646}, std::int64_t{2147483648}, std::int64_t{-1}, std::int64_t{10}}) {
    nlohmann::json file = tokenizer_json({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"});  // 5 in model.vocab, 5 added
    file["model"]["vocab"]["[SEP]"] = id;
    const auto path = test::write_file(dir_ / "tokenizer.json", file.dump());
    try {
      WordPieceTokenizer::from_file(path);
      ADD_FAILURE() << "id " << id << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("tokenizer.json: model.vocab: id of \"[SEP]\" must be an integer in [0, 10) (the file lists 10 entries), got " +
                                           std::to_string(id)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(WordPieceTest, FolderPrefersTokenizerJsonAndReadsConfig) {
  test::TempDir folder;
  test::write_file(folder / "vocab.txt", vocab_txt(kVocab));
  test::write_file(folder / "tokenizer_config.json", R"({"do_lower_case": false, "model_max_length": 512})");
  EXPECT_EQ(WordPieceTokenizer::from_folder(folder.path()).tokenize("Hello"), (Pieces{"Hello"}));
  WordPieceOptions lower;
  lower.lowercase = true;  // the caller's option wins over tokenizer_config.json
  EXPECT_EQ(WordPieceTokenizer::from_folder(folder.path(), lower).tokenize("Hello"), (Pieces{"hello"}));

  // With a tokenizer.json next to it, that file is read: here its vocabulary lacks "Hello".
  std::vector<std::string> smaller = kVocab;
  smaller[15] = "Hallo";
  test::write_file(folder / "tokenizer.json", tokenizer_json(smaller).dump());
  EXPECT_EQ(WordPieceTokenizer::from_folder(folder.path()).tokenize("Hello"), (Pieces{"[UNK]"}));

  test::TempDir empty;
  EXPECT_THROW(WordPieceTokenizer::from_folder(empty.path()), InputError);
}

TEST_F(WordPieceTest, MissingSpecialTokenIsAnError) {
  std::vector<std::string> no_cls = kVocab;
  no_cls[2] = "[CLX]";
  const auto path = test::write_file(dir_ / "no_cls.txt", vocab_txt(no_cls));
  try {
    WordPieceTokenizer::from_file(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path.string());
    EXPECT_NE(std::string(e.what()).find("\"[CLS]\""), std::string::npos) << e.what();
  }
  std::vector<std::string> no_pad(kVocab.begin() + 1, kVocab.end());
  EXPECT_THROW(WordPieceTokenizer::from_file(test::write_file(dir_ / "no_pad.txt", vocab_txt(no_pad))), InputError);
}

TEST_F(WordPieceTest, UnsupportedOrBrokenTokenizerJsonIsAnError) {
  auto bpe = tokenizer_json(kVocab);
  bpe["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", nlohmann::json::array()}};
  const auto bpe_path = test::write_file(dir_ / "bpe.json", bpe.dump());
  try {
    WordPieceTokenizer::from_file(bpe_path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bpe_path.string());
    EXPECT_NE(std::string(e.what()).find("\"BPE\""), std::string::npos) << e.what();
  }

  const auto broken = test::write_file(dir_ / "broken.json", "{\n  \"model\": {\n    \"type\": \"WordPiece\",,\n");
  try {
    WordPieceTokenizer::from_file(broken);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), broken.string());
    EXPECT_EQ(e.line(), 3u) << e.what();
  }

  auto other_normalizer = tokenizer_json(kVocab);
  other_normalizer["normalizer"] = {{"type", "NFKC"}};
  EXPECT_THROW(WordPieceTokenizer::from_file(test::write_file(dir_ / "nfkc.json", other_normalizer.dump())), InputError);
  EXPECT_THROW(WordPieceTokenizer::from_file(dir_ / "missing.txt"), InputError);
}

}  // namespace
}  // namespace xmc
