#include "engine/train/training_process.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "engine/core/memory_budget.h"
#include "engine/model/encoder_factory.h"
#include "engine/store/run_files.h"

namespace xmc {

torch::Device set_up_training_process(const TrainConfig& config, int local_ranks, bool main_rank, const std::filesystem::path& run_dir,
                                      const std::function<void(const std::string&)>& phase) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(config.threads > 0 ? static_cast<int>(config.threads) : std::max(1, cores / std::max(1, local_ranks)));
  set_memory_budget_mb(config.memory_mb);
  phase("memory budget of the temporaries: " + describe_memory_budget());
  if (main_rank && !run_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove(evaluation_set_aside_file(run_dir), ignored);
  }
  return parse_device(config.device);
}

}  // namespace xmc
