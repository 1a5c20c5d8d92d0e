// Writes a randomly initialised BERT-style encoder as a Hugging Face folder (config.json, model.safetensors,
// vocab.txt), for benchmarks that need a transformer of a given size without downloading one: the vocabulary
// is the special tokens plus the most frequent lower-cased words of a dataset's training and label texts.
//   random_bert --dataset datasets/demo/wordnet-20k --out /tmp/bert-6x768 --layers 6 --hidden 768
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <unordered_map>

#include "engine/data/dataset.h"
#include "engine/model/bert/bert_encoder.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a random-init BERT-style encoder folder (config.json, model.safetensors, vocab.txt)"};
  std::string dataset, out;
  xmc::BertConfig config;
  std::int64_t vocabulary = 30000;
  app.add_option("--dataset", dataset, "Dataset folder whose words make the vocabulary")->required();
  app.add_option("--out", out, "Folder to write")->required();
  app.add_option("--layers", config.num_layers, "Transformer layers")->capture_default_str();
  app.add_option("--hidden", config.hidden_size, "Hidden size")->capture_default_str();
  app.add_option("--heads", config.num_heads, "Attention heads")->capture_default_str();
  app.add_option("--intermediate", config.intermediate_size, "Feed-forward size (default 4 x hidden)");
  app.add_option("--vocabulary", vocabulary, "Words kept (most frequent first)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (app.count("--intermediate") == 0) config.intermediate_size = 4 * config.hidden_size;
  try {
    const xmc::Dataset data = xmc::load_dataset(dataset, {.load_features = false});
    std::unordered_map<std::string, std::int64_t> counts;
    auto add_words = [&](const std::vector<std::string>& texts) {
      for (const auto& text : texts) {
        std::string word;
        for (const char c : text + " ") {
          if (std::isalnum(static_cast<unsigned char>(c))) word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          else if (!word.empty()) ++counts[std::exchange(word, {})];
        }
      }
    };
    add_words(data.train_text);
    add_words(data.label_text);
    std::vector<std::pair<std::string, std::int64_t>> words(counts.begin(), counts.end());
    std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (static_cast<std::int64_t>(words.size()) > vocabulary) words.resize(static_cast<std::size_t>(vocabulary));
    std::vector<std::string> tokens{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (const auto& [word, count] : words) tokens.push_back(word);
    config.vocab_size = static_cast<std::int64_t>(tokens.size());
    config.validate("random_bert");
    torch::manual_seed(1);
    xmc::BertEncoder encoder(config, xmc::BertEncoderOptions{});
    xmc::save_bert_encoder(encoder, config, out);
    std::ofstream vocab(std::filesystem::path(out) / "vocab.txt");
    for (const auto& t : tokens) vocab << t << '\n';
    std::cout << "wrote " << out << ": " << config.num_layers << " layers, hidden " << config.hidden_size << ", " << tokens.size()
              << " tokens\n";
  } catch (const std::exception& e) {
    std::cerr << "random_bert: " << e.what() << '\n';
    return 1;
  }
}
