#pragma once

namespace xmc::cli {

/// Runs the `xmc` command line; returns the process exit code (0 only on success).
int run(int argc, char** argv);

}  // namespace xmc::cli
