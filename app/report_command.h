#pragma once
// `xmc report`: the report the workbench's File menu exports (HTML or PDF), rendered headless.

namespace CLI {
class App;
}

namespace xmc::cli {
struct CommandContext;
}

namespace xmc::app {

/// Registers `xmc report --run ID [--db DB] --out FILE.html|FILE.pdf` (an xmc::cli::CommandRegistration).
void add_report_command(CLI::App& app, cli::CommandContext& context);

}  // namespace xmc::app
