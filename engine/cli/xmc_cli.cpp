#include "engine/cli/xmc_cli.h"

#include <cstdio>
#include <iostream>

#include "engine/cli/command_context.h"
#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/core/error.h"
#include "engine/core/file_size_limit.h"
#include "engine/core/version.h"

namespace xmc::cli {

void CommandContext::print_json(const nlohmann::json& j) const {
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;  // label texts may hold any bytes
}

int run(int argc, char** argv, const std::vector<CommandRegistration>& extra) {
  keep_freed_memory_for_reuse();
  report_file_size_limit_as_write_errors();
  run_blas_on_calling_thread();
  CLI::App app{"xmc — extreme multi-label classification workbench (headless)", "xmc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("xmc ") + kCodeVersion);
  app.footer(
      "Examples:\n"
      "  xmc dataset build wordnet --out data/wordnet --max-items 20000\n"
      "  xmc dataset info data/wordnet\n"
      "  xmc train --config datasets/configs/dexml-bow-wordnet-hard.json --set dataset=data/wordnet --db runs.sqlite\n"
      "  xmc predict --db runs.sqlite --run 1 --text \"golden retriever: a breed of dog\"\n"
      "  xmc eval --truth data/wordnet/tst_X_Y.txt --pred pred.txt --train data/wordnet/trn_X_Y.txt --json\n"
      "Run 'xmc COMMAND --help' for the options of a command.");
  CommandContext context;
  add_dataset_commands(app, context);
  add_eval_command(app, context);
  add_train_command(app, context);
  add_predict_command(app, context);
  add_labels_commands(app, context);
  add_runs_commands(app, context);
  add_sweep_command(app, context);
  add_tokenize_command(app, context);
  add_embed_command(app, context);
  add_images_command(app, context);
  add_export_command(app, context);
  for (const auto& add : extra) add(app, context);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Cancelled& e) {
    std::fflush(stdout);
    std::cerr << "xmc: " << e.what() << std::endl;
    return 130;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::cerr << "xmc: error: " << e.what() << std::endl;
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "xmc: error: out of memory" << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "xmc: internal error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace xmc::cli
