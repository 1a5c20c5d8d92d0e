// `xmc tokenize`: the token ids a registered tokenizer gives each text, one JSON array per line: what an encoder
// paired with that tokenizer reads (markers such as [CLS] and [SEP] included where the tokenizer adds them).
#include <cstdio>

#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/data/text_lines.h"
#include "engine/text/tokenizer_info.h"

namespace xmc::cli {

void add_tokenize_command(CLI::App& app, CommandContext& /*context*/) {
  struct Args {
    std::string tokenizer;
    std::string type;
    std::vector<std::string> texts;
    std::string input;
    std::int64_t max_len = 0;
  };
  auto args = std::make_shared<Args>();
  std::string types;
  for (const TokenizerInfo& t : registered_tokenizers()) types += "\n  " + t.name + ": " + t.description;
  auto* cmd = app.add_subcommand("tokenize", "Print the token ids a tokenizer gives each text (one JSON array per line)");
  cmd->add_option("--tokenizer", args->tokenizer, "Tokenizer file (a run's vocab.txt, a vocab.txt, a tokenizer.json) or a model folder")
      ->required();
  cmd->add_option("--type", args->type, "Tokenizer type (default: the one that reads the file)");
  cmd->add_option("--text", args->texts, "A text (repeatable)");
  cmd->add_option("--input", args->input, "File with one text per line");
  cmd->add_option("--max-len", args->max_len, "Ids per text at most, markers included (0: the tokenizer's default)")->check(CLI::NonNegativeNumber);
  cmd->footer("Tokenizers:" + types +
              "\nExamples:\n  xmc tokenize --tokenizer models/bert-tiny --text \"graph neural networks\"\n"
              "  xmc tokenize --tokenizer runs/run-4/vocab.txt --input queries.txt");
  cmd->callback([args] {
    if (args->texts.empty() == args->input.empty()) throw ConfigError("give --text (repeatable) or --input with one text per line, not both");
    const auto tokenizer = make_tokenizer({.file = args->tokenizer, .max_len = args->max_len}, args->type);
    const std::vector<std::string> texts = args->input.empty() ? args->texts : read_text_lines(args->input);
    // A chunk at a time: an input of millions of lines never holds all their ids at once.
    constexpr std::size_t kChunk = 4096;
    for (std::size_t start = 0; start < texts.size(); start += kChunk) {
      const std::vector<std::string> chunk(texts.begin() + static_cast<std::ptrdiff_t>(start),
                                           texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), start + kChunk)));
      const TokenizedCorpus corpus = tokenizer->tokenize(chunk);
      for (std::int64_t row = 0; row < corpus.size(); ++row) {
        std::string line = "[";
        for (const std::int32_t id : corpus.tokens(row)) line += (line.size() > 1 ? "," : "") + std::to_string(id);
        std::printf("%s]\n", line.c_str());
      }
    }
  });
}

}  // namespace xmc::cli
