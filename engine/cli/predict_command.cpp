// `xmc predict`: rank labels for texts with a trained run.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "engine/cli/command_context.h"
#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/data/text_lines.h"
#include "engine/session/session.h"
#include "engine/session/default_store_path.h"

namespace xmc::cli {
namespace {

struct PredictArgs {
  std::int64_t run = 0;
  std::string db = default_run_store_path().string();
  std::string text, input, out, mode, device, index = "exact";
  std::int64_t top = 10;
  bool json = false;
};

}  // namespace

void add_predict_command(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("predict", "Rank labels for a text (or a file of texts) with a trained run");
  auto args = std::make_shared<PredictArgs>();
  cmd->add_option("--run", args->run, "Run id")->required();
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  cmd->add_option("--text", args->text, "One query text");
  cmd->add_option("--input", args->input, "File with one query text per line");
  cmd->add_option("--out", args->out, "With --input: write an XC score file (header 'N L', 'label:score' rows)");
  cmd->add_option("--top", args->top, "Labels per query")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--mode", args->mode, "Inference mode (default: the method's primary); a name the run does not have is refused with the list of the modes it has");
  cmd->add_option("--device", args->device, "Override the run's device (cpu, cuda)");
  cmd->add_option("--index", args->index,
                  "Label index searched in every mode: exact, ivf (ivf:probe=64), hnsw (hnsw:M=32,ef=200), faiss:Flat, faiss:IVF256,Flat, "
                  "faiss:IVF256,PQ16; an approximate index is saved with the run and reused")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the ranking as one JSON line");
  cmd->footer(
      "Examples:\n"
      "  xmc predict --run 3 --text \"golden retriever: a breed of dog\" --top 10\n"
      "  xmc predict --run 3 --input data/wordnet/tst.raw.txt --out pred.txt --top 100\n"
      "  xmc predict --run 3 --input data/wordnet/tst.raw.txt --out pred.txt --top 100 --index faiss:IVF256,Flat\n"
      "  xmc eval --truth data/wordnet/tst_X_Y.txt --pred pred.txt --train data/wordnet/trn_X_Y.txt");
  cmd->callback([args, &context] {
    if (args->text.empty() == args->input.empty()) throw ConfigError("give exactly one of --text or --input");
    if (!args->out.empty() && args->input.empty()) throw ConfigError("--out needs --input");
    require_existing_run_store(args->db);
    const Predictor predictor = Session(args->db).open_predictor(args->run, args->device, context.progress, args->index);
    if (predictor.fuses_images())
      std::fprintf(stderr, "note: run %lld fuses images: its labels are encoded with theirs, but queries given as text have none (the run's own "
                           "evaluation read the test split's images), so a dataset query may rank lower here than there\n",
                   static_cast<long long>(args->run));
    if (!args->text.empty()) {
      if (predictor.known_token_counts({args->text}).front() == 0)
        std::fprintf(stderr, "warning: no word of the query is in run %lld's vocabulary: the ranking below is the same for any such text\n",
                     static_cast<long long>(args->run));
      const auto ranked = predictor.predict({args->text}, args->top, args->mode).front();
      if (args->json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& r : ranked) j.push_back({{"label", r.label}, {"score", r.score}, {"text", r.text}});
        context.print_json(j);
      } else {
        for (std::size_t i = 0; i < ranked.size(); ++i)
          std::printf("%3zu  %8.4f  %s\n", i + 1, static_cast<double>(ranked[i].score), ranked[i].text.c_str());
      }
      return;
    }
    const auto texts = read_text_lines(args->input);
    {
      const auto known = predictor.known_token_counts(texts);
      std::vector<std::size_t> unknown;  // 1-based lines
      for (std::size_t i = 0; i < known.size(); ++i)
        if (known[i] == 0) unknown.push_back(i + 1);
      if (!unknown.empty()) {
        std::string lines;
        for (std::size_t i = 0; i < std::min<std::size_t>(unknown.size(), 5); ++i) lines += (i ? ", " : "") + std::to_string(unknown[i]);
        std::fprintf(stderr, "warning: %s: %zu of %zu queries have no word in run %lld's vocabulary (line%s %s%s); they all get the same ranking\n",
                     args->input.c_str(), unknown.size(), texts.size(), static_cast<long long>(args->run), unknown.size() > 1 ? "s" : "",
                     lines.c_str(), unknown.size() > 5 ? ", ..." : "");
      }
    }
    std::unique_ptr<AtomicFileWriter> out;
    if (!args->out.empty()) {
      out = std::make_unique<AtomicFileWriter>(args->out);
      out->stream() << texts.size() << ' ' << predictor.num_labels() << '\n';
    }
    constexpr std::size_t kChunk = 2048;
    context.progress.start("predicting", static_cast<std::int64_t>(texts.size()));
    nlohmann::json all = nlohmann::json::array();
    std::vector<std::pair<std::int64_t, float>> row;
    for (std::size_t start = 0; start < texts.size(); start += kChunk) {
      const std::vector<std::string> chunk(texts.begin() + static_cast<std::ptrdiff_t>(start),
                                           texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), start + kChunk)));
      for (const auto& ranked : predictor.predict(chunk, args->top, args->mode)) {
        if (out) {
          // XC score files list labels by index; the scores carry the ranking.
          row.clear();
          for (const auto& r : ranked) row.emplace_back(r.label, r.score);
          std::sort(row.begin(), row.end());
          for (std::size_t i = 0; i < row.size(); ++i) out->stream() << (i ? " " : "") << row[i].first << ':' << row[i].second;
          out->stream() << '\n';
        } else if (args->json) {
          nlohmann::json j = nlohmann::json::array();
          for (const auto& r : ranked) j.push_back({{"label", r.label}, {"score", r.score}});
          all.push_back(j);
        } else {
          for (std::size_t i = 0; i < ranked.size(); ++i) std::printf("%s%s", i ? " | " : "", ranked[i].text.c_str());
          std::printf("\n");
        }
      }
      context.progress.update(static_cast<std::int64_t>(std::min(texts.size(), start + kChunk)));
    }
    context.progress.finish();
    if (out) {
      out->commit();
      std::fprintf(stderr, "wrote %s\n", args->out.c_str());
    }
    if (args->json && !out) context.print_json(all);
  });
}

}  // namespace xmc::cli
