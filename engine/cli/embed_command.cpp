// `xmc embed`: the vectors a run's model gives texts (queries, or its labels), or a bare encoder folder's pooled
// output: one line of space-separated floats per text, or a .npy matrix.
#include <cstdio>

#include "engine/cli/command_context.h"
#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/data/npy_file.h"
#include "engine/data/text_lines.h"
#include "engine/session/default_store_path.h"
#include "engine/session/encoder_embedding.h"
#include "engine/session/session.h"

namespace xmc::cli {
namespace {

struct EmbedArgs {
  std::int64_t run = 0;
  std::string db = default_run_store_path().string();
  std::string side = "query", mode, device;
  std::string encoder, tokenizer, prompt_template, pooling = "mean";
  std::int64_t max_len = 32;
  std::string input, out;
};

void write_vectors(const std::string& out, std::int64_t rows, std::int64_t dim, const std::vector<float>& values) {
  if (out.size() > 4 && out.compare(out.size() - 4, 4, ".npy") == 0) {
    write_npy_float32(out, rows, dim, values);
    return;
  }
  AtomicFileWriter writer(out);
  char number[32];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < dim; ++c) {
      std::snprintf(number, sizeof number, "%.8g", static_cast<double>(values[static_cast<std::size_t>(r * dim + c)]));
      writer.stream() << (c ? " " : "") << number;
    }
    writer.stream() << '\n';
  }
  writer.commit();
}

}  // namespace

void add_embed_command(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("embed", "Write the vectors a run (or a bare encoder folder) gives texts");
  auto args = std::make_shared<EmbedArgs>();
  cmd->add_option("--run", args->run, "Run id: its model's vectors (with its heads)");
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  cmd->add_option("--side", args->side, "query: the texts of --input as queries; label: every label of the run")
      ->check(CLI::IsMember({"query", "label"}))
      ->capture_default_str();
  cmd->add_option("--mode", args->mode, "The run's inference mode whose space is written (default: its primary)");
  cmd->add_option("--device", args->device, "Override the run's device (cpu, cuda)");
  cmd->add_option("--encoder", args->encoder, "A local Hugging Face folder instead of a run: the bare encoder's pooled output, no head");
  cmd->add_option("--tokenizer", args->tokenizer, "With --encoder, a decoder: tokenizer.json or its folder (default: the encoder's)");
  cmd->add_option("--template", args->prompt_template, "With --encoder, a decoder: the prompt ({text}; default \"This product text: {text}\")");
  cmd->add_option("--pooling", args->pooling, "With --encoder: mean, cls (bert) or last (decoder)")->capture_default_str();
  cmd->add_option("--max-len", args->max_len, "With --encoder: tokens per text")->check(CLI::Range(2, 8192))->capture_default_str();
  cmd->add_option("--input", args->input, "File with one text per line");
  cmd->add_option("--out", args->out, "Where to write: FILE.npy (float32 [texts x d]) or a text file of space-separated floats per line")
      ->required();
  cmd->footer(
      "Examples:\n"
      "  xmc embed --run 3 --input queries.txt --out queries.npy\n"
      "  xmc embed --run 3 --side label --out labels.txt\n"
      "  xmc embed --encoder models/qwen2.5-0.5b --input titles.txt --out titles.npy");
  cmd->callback([args, &context] {
    if ((args->run > 0) == !args->encoder.empty()) throw ConfigError("give one of --run ID or --encoder DIR");
    if (!args->encoder.empty()) {
      if (args->input.empty()) throw ConfigError("--encoder needs --input, a file with one text per line");
      const TextVectors vectors = embed_with_encoder({.folder = args->encoder, .tokenizer = args->tokenizer, .prompt_template = args->prompt_template,
                                                      .pooling = args->pooling, .max_len = args->max_len,
                                                      .device = args->device.empty() ? "cpu" : args->device},
                                                     read_text_lines(args->input), context.progress);
      write_vectors(args->out, vectors.rows, vectors.dim, vectors.values);
      return;
    }
    require_existing_run_store(args->db);
    const Predictor predictor = Session(args->db).open_predictor(args->run, args->device, context.progress);
    std::int64_t dim = 0;
    if (args->side == "label") {
      if (!args->input.empty()) throw ConfigError("--side label writes the run's own labels; --input is for queries");
      const std::vector<float> values = predictor.label_vectors(args->mode, dim);
      write_vectors(args->out, predictor.num_labels(), dim, values);
      return;
    }
    if (args->input.empty()) throw ConfigError("--side query needs --input, a file with one text per line");
    const std::vector<std::string> texts = read_text_lines(args->input);
    const std::vector<float> values = predictor.query_vectors(texts, args->mode, dim);
    write_vectors(args->out, static_cast<std::int64_t>(texts.size()), dim, values);
  });
}

}  // namespace xmc::cli
