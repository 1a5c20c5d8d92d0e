// The tokenizer registry: each registered tokenizer is found by name or by the file it reads, builds the
// tokenizer its encoder uses (the same ids), and a file no tokenizer reads is refused by name.
#include "engine/text/tokenizer_info.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/text/vocabulary.h"
#include "engine/text/wordpiece_tokenizer.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

using test::TempDir;
using test::write_file;
using Ids = std::vector<std::int32_t>;

Ids ids_of(const TextTokenizer& tokenizer, const std::string& text) {
  const TokenizedCorpus corpus = tokenizer.tokenize({text});
  const auto row = corpus.tokens(0);
  return {row.begin(), row.end()};
}

// [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3, then words: ids are line numbers - 1.
constexpr const char* kBertVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n";

TEST(TokenizerRegistry, ListsEachTokenizerOnceAndRefusesAnUnknownName) {
  std::vector<std::string> names;
  for (const TokenizerInfo& t : registered_tokenizers()) {
    EXPECT_FALSE(t.description.empty()) << t.name;
    EXPECT_TRUE(t.reads && t.make) << t.name;
    names.push_back(t.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"words", "wordpiece", "bpe"}));
  EXPECT_EQ(tokenizer_info("wordpiece").name, "wordpiece");
  try {
    tokenizer_info("sentencepiece");
    ADD_FAILURE() << "an unknown tokenizer was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("words, wordpiece, bpe"), std::string::npos) << e.what();
  }
}

TEST(TokenizerRegistry, FindsTheTokenizerOfAFileAndGivesItsIds) {
  TempDir dir;
  // A BERT vocab.txt: [CLS] hello world ##s [SEP], worked by hand from the line numbers.
  const auto bert_vocab = write_file(dir.path() / "vocab.txt", kBertVocab);
  EXPECT_FALSE(tokenizer_info("words").reads(bert_vocab));
  EXPECT_TRUE(tokenizer_info("wordpiece").reads(bert_vocab));
  EXPECT_EQ(ids_of(*make_tokenizer({.file = bert_vocab}), "Hello worlds"), (Ids{2, 4, 5, 6, 3}));
  EXPECT_EQ(ids_of(*make_tokenizer({.file = dir.path()}), "world"), (Ids{2, 5, 3})) << "a model folder holding vocab.txt";
  EXPECT_EQ(ids_of(*make_tokenizer({.file = bert_vocab, .max_len = 3}), "hello world"), (Ids{2, 4, 3})) << "max_len caps the ids";

  // A run's word vocabulary: its own ids, as the bow encoder reads them.
  const Vocabulary words = Vocabulary::build({"graph networks", "graph kernels"});
  words.save(dir.path() / "run_vocab.txt");
  EXPECT_TRUE(tokenizer_info("words").reads(dir.path() / "run_vocab.txt"));
  EXPECT_FALSE(tokenizer_info("wordpiece").reads(dir.path() / "run_vocab.txt"));
  EXPECT_EQ(ids_of(*make_tokenizer({.file = dir.path() / "run_vocab.txt"}), "graph kernels unseen"),
            (Ids{words.id_of("graph"), words.id_of("kernels"), Vocabulary::kUnkId}));

  // Named explicitly, a file of another kind is refused by the tokenizer that cannot read it.
  EXPECT_THROW(make_tokenizer({.file = dir.path() / "run_vocab.txt"}, "wordpiece"), InputError);
  // A file no tokenizer reads, and a missing one, are named.
  const auto other = write_file(dir.path() / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  try {
    make_tokenizer({.file = other});
    ADD_FAILURE() << "a Unigram tokenizer.json found a tokenizer";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(other.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_tokenizer({.file = dir.path() / "missing.txt"}), InputError);
  // A BPE model is the bpe tokenizer's; one it cannot read (no byte-level pre-tokenizer) is refused, naming the file.
  const auto bare_bpe = write_file(dir.path() / "bpe.json", R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})");
  EXPECT_TRUE(tokenizer_info("bpe").reads(bare_bpe));
  EXPECT_FALSE(tokenizer_info("wordpiece").reads(bare_bpe));
  try {
    make_tokenizer({.file = bare_bpe});
    ADD_FAILURE() << "a BPE model without a byte-level pre-tokenizer was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bare_bpe.string()), std::string::npos) << e.what();
  }
  for (const char* junk : {"", "\xff\xfe\x00", "{", "[CLS"})
    for (const TokenizerInfo& t : registered_tokenizers()) EXPECT_FALSE(t.reads(write_file(dir.path() / "junk.json", junk))) << t.name;
}

}  // namespace
}  // namespace xmc
