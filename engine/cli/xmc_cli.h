#pragma once
#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace xmc::cli {

struct CommandContext;

/// Adds a subcommand to `xmc` from outside the engine (the app adds `xmc report`, which renders with Qt).
using CommandRegistration = std::function<void(CLI::App& app, CommandContext& context)>;

/// Runs the `xmc` command line with the engine's commands plus `extra` ones; returns the process exit
/// code (0 only on success).
int run(int argc, char** argv, const std::vector<CommandRegistration>& extra = {});

}  // namespace xmc::cli
