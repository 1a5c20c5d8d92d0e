// `xmc export`: a trained run's encoder as a Hugging Face model folder (a decoder's adapters merged).
#include <cstdio>

#include "engine/cli/command_context.h"
#include "engine/session/default_store_path.h"
#include "engine/session/run_export.h"
#include "engine/session/session.h"

namespace xmc::cli {

void add_export_command(CLI::App& app, CommandContext& context) {
  struct Args {
    std::int64_t run = 0;
    std::string db = default_run_store_path().string();
    std::string out;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export", "Write a run's encoder as a Hugging Face model folder (LoRA adapters merged)");
  cmd->add_option("--run", args->run, "Run id (a bert or decoder run)")->required();
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  cmd->add_option("--out", args->out, "New folder to write: config.json, model.safetensors, the tokenizer's files, xmc_heads.safetensors")
      ->required();
  cmd->add_flag("--json", args->json, "Print what was written as one JSON line");
  cmd->footer(
      "Examples:\n"
      "  xmc export --run 7 --out models/qwen2.5-0.5b-lf-amazontitles\n"
      "  python3 -c \"import transformers; transformers.AutoModel.from_pretrained('models/qwen2.5-0.5b-lf-amazontitles')\"");
  cmd->callback([args, &context] {
    require_existing_run_store(args->db);
    const ExportedModel exported = export_run_model(args->db, args->run, args->out);
    if (args->json) context.print_json({{"folder", exported.folder.string()}, {"model", exported.description}});
    else std::printf("run %lld exported to %s (%s)\n", static_cast<long long>(args->run), exported.folder.c_str(), exported.description.c_str());
  });
}

}  // namespace xmc::cli
