// The DEXML paper's synthetic experiment: why dropping the other positives from the softmax denominator
// matters. A marker token appears in 100 training queries and in the text of one label M; those queries
// all have the same five labels {M, A, B, C, D}. Test queries carry the marker and are tagged with M
// only. Softmax must give the five positives equal scores (so M is first ~1/5 of the time); decoupled
// softmax lets M keep the advantage its shared token gives it. Background queries with random labels
// make the rest of the label space. Prints one JSON line per (encoder, loss) and a markdown table.
// Usage: bench_dexml_synthetic [work_dir]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/train/training_run.h"
#include "engine/model/transformer_options.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"

namespace {

constexpr int kLabels = 200;
constexpr int kWords = 600;

std::string random_words(std::mt19937_64& rng, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? " " : "") + std::string("w") + std::to_string(rng() % kWords);
  return text;
}

void write_dataset(const std::filesystem::path& dir) {
  std::mt19937_64 rng(11);
  xmc::Dataset d;
  d.meta.name = "dexml-synthetic";
  d.label_text.push_back("marker " + random_words(rng, 3));  // label 0 = M
  for (int l = 1; l < kLabels; ++l) d.label_text.push_back(random_words(rng, 4));
  std::vector<std::vector<std::int32_t>> train, test;
  for (int i = 0; i < 100; ++i) {
    d.train_text.push_back("marker " + random_words(rng, 5));
    train.push_back({0, 1, 2, 3, 4});
  }
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::int32_t> y;
    std::string text;
    for (int j = 0; j < 3; ++j) {
      const auto l = static_cast<std::int32_t>(5 + rng() % (kLabels - 5));
      y.push_back(l);
      // Background queries share one word with each of their labels, so there is something to learn.
      text += d.label_text[static_cast<std::size_t>(l)].substr(0, d.label_text[static_cast<std::size_t>(l)].find(' ')) + " ";
    }
    d.train_text.push_back(text + random_words(rng, 3));
    train.push_back(y);
  }
  for (int i = 0; i < 200; ++i) {
    d.test_text.push_back("marker " + random_words(rng, 5));
    test.push_back({0});
  }
  d.train_labels = xmc::csr_from_rows(train, kLabels);
  d.test_labels = xmc::csr_from_rows(test, kLabels);
  xmc::save_dataset(d, dir);
}

void write_small_bert(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream vocab(dir / "vocab.txt");
  vocab << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nmarker\n";
  for (int w = 0; w < kWords; ++w) vocab << "w" << w << "\n";
  std::ofstream config(dir / "config.json");
  config << R"({"model_type": "bert", "vocab_size": )" << 5 + kWords
         << R"(, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
  "max_position_embeddings": 64, "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12})";
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path work = argc > 1 ? argv[1] : std::filesystem::temp_directory_path() / "xmc-dexml-synthetic";
  std::filesystem::remove_all(work);
  write_dataset(work / "data");
  write_small_bert(work / "bert");
  struct Row {
    std::string encoder, loss;
    double p1;
  };
  std::vector<Row> rows;
  for (const std::string encoder : {"bow", "bert"})
    for (const std::string loss : {"decoupled_softmax", "softmax"}) {
      xmc::TrainConfig c;
      c.dataset = work / "data";
      c.edit<xmc::EncoderOptions>().type = encoder;
      c.edit<xmc::EncoderOptions>().dim = 64;
      if (encoder == "bert") {
        c.edit<xmc::EncoderOptions>().path = work / "bert";
        c.edit<xmc::TransformerOptions>().max_len = 16;
        c.lr = 5e-4;
        c.epochs = 8;
      } else {
        c.lr = 5e-3;
        c.epochs = 8;
      }
      c.edit<xmc::LossOptions>().kind = loss;
      c.batch_size = 64;
      c.edit<xmc::LossOptions>().temperature = 0.05;
      c.eval_every = 0;
      c.eval_k = {1, 5};
      c.eval_top = 10;
      c.seed = 3;
      xmc::TrainingRun run(c, work / "runs.sqlite");
      const auto result = run.run();
      const double p1 = result.metrics.get("P@1");
      rows.push_back({encoder, loss, p1});
      std::printf("{\"bench\": \"dexml_synthetic\", \"encoder\": \"%s\", \"loss\": \"%s\", \"marker_P@1\": %.4f}\n", encoder.c_str(),
                  loss.c_str(), p1);
      std::fflush(stdout);
    }
  std::printf("\n| encoder | decoupled softmax P@1 | softmax P@1 |\n|---|---|---|\n");
  for (std::size_t i = 0; i + 1 < rows.size(); i += 2)
    std::printf("| %s | %.1f%% | %.1f%% |\n", rows[i].encoder.c_str(), 100 * rows[i].p1, 100 * rows[i + 1].p1);
  return 0;
}
