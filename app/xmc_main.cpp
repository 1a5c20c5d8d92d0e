#include "engine/cli/xmc_cli.h"
#ifdef XMC_WITH_REPORT_COMMAND
#include "app/report_command.h"
#endif

int main(int argc, char** argv) {
#ifdef XMC_WITH_REPORT_COMMAND
  return xmc::cli::run(argc, argv, {xmc::app::add_report_command});
#else
  return xmc::cli::run(argc, argv);
#endif
}
