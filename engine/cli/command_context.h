#pragma once
// What every `xmc` subcommand shares: the progress display and how results are printed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/cli/terminal_progress.h"

namespace xmc::cli {

struct CommandContext {
  TerminalProgress progress;
  /// Prints `j` as one line on stdout: the machine-readable result of `--json` (always the last line).
  void print_json(const nlohmann::json& j) const;
};

void add_dataset_commands(CLI::App& app, CommandContext& context);
void add_eval_command(CLI::App& app, CommandContext& context);
void add_runs_commands(CLI::App& app, CommandContext& context);
void add_train_command(CLI::App& app, CommandContext& context);
void add_predict_command(CLI::App& app, CommandContext& context);
void add_labels_commands(CLI::App& app, CommandContext& context);
void add_sweep_command(CLI::App& app, CommandContext& context);
void add_tokenize_command(CLI::App& app, CommandContext& context);
void add_embed_command(CLI::App& app, CommandContext& context);
void add_images_command(CLI::App& app, CommandContext& context);
void add_export_command(CLI::App& app, CommandContext& context);

}  // namespace xmc::cli
