#include "engine/cli/xmc_cli.h"

int main(int argc, char** argv) { return xmc::cli::run(argc, argv); }
