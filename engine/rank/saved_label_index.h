#pragma once
// Engine-internal (includes torch). An approximate index over a mode's label matrix, built once per run, mode and
// index spec and saved in the run's folder: reused while its file is newer than the run's checkpoint and matches
// the matrix, built again (and saved, where the folder may be written) otherwise.
#include <filesystem>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "engine/core/progress.h"
#include "engine/index/index.h"

namespace xmc {

/// The index of `spec` over the rows of `label_matrix` for mode `mode` of the run whose folder is `run_dir` and whose
/// checkpoint was written at `checkpoint_time` (building one is reported to `progress`).
std::unique_ptr<Index> saved_label_index(const std::string& spec, const torch::Tensor& label_matrix, const std::string& mode,
                                         const std::filesystem::path& run_dir, std::filesystem::file_time_type checkpoint_time, Progress& progress);

}  // namespace xmc
