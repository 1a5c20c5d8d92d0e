#pragma once
// Engine-internal (includes torch). A checkpoint holds everything needed to continue a run bit-for-bit
// on CPU: model, the current stage's optimiser, sampler RNG and clusters, the epoch's batch order and
// position, the stale embeddings of the last pass, the method's own state (e.g. hard-negative
// shortlists, in the sub-archive "method") and torch's RNGs (the CPU's; a GPU's too for a model there). Written to a temporary file and renamed, so
// a crash never leaves a half-written checkpoint in place of a good one.
#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace xmc {

class MethodState;
struct StageSpec;

/// TrainingState::stage after a method's last stage.
inline constexpr const char* kAllStagesDone = "done";

struct TrainingState {
  std::string stage;               ///< the method's current stage ("" = its first); "done" after the last
  std::int64_t epoch = 0;          ///< epoch within the stage
  std::int64_t batch_in_epoch = 0; ///< batches of `epoch` already done (0 = at the epoch's start)
  std::int64_t step = 0;           ///< optimiser steps so far (over all stages)
  std::int64_t stage_start_step = 0;  ///< `step` when the current stage began (its schedule counts from there)
  std::vector<std::vector<std::int64_t>> epoch_batches;  ///< the current epoch's batches (when mid-epoch)
  std::string sampler_state;       ///< QueryBatcher::save_state()
  std::string label_pool_rng;      ///< the label-pool random stream (std::mt19937_64 as text); "" = not saved
  std::string store_id;            ///< the run store that owns the run ("" in checkpoints older than identities)
  std::int64_t run_id = 0;         ///< the run in that store (0 = not recorded)
};

/// Refuses, naming `file`, a checkpoint's training state that does not fit this run (one of another run, or a damaged
/// one) before any of its rows is used: saved batches naming rows past `training_rows` (when `batches_are_rows`: a
/// method trained by gradient steps; a fitted method's older checkpoints saved its own units), or a stage that is
/// not one of `stages` of method `method_name`.
void check_resumable(const TrainingState& state, const std::vector<StageSpec>& stages, std::int64_t training_rows, bool batches_are_rows,
                     const std::string& method_name, const std::filesystem::path& file);

/// A random stream as a checkpoint keeps it (TrainingState::label_pool_rng: its text), and back from that text;
/// a text that does not parse is refused naming `file`.
std::string random_stream_text(const std::mt19937_64& stream);
void read_random_stream(const std::string& text, std::mt19937_64& stream, const std::filesystem::path& file);

/// `optimizer` may be null (no stage in progress).
void save_checkpoint(const std::filesystem::path& path, MethodState& method, torch::optim::Optimizer* optimizer, const TrainingState& state);

/// Refuses, naming the file, a LibTorch archive (a checkpoint, a saved tensor) whose bytes fail their CRC-32s or
/// whose module code is more than declarations (engine/core/archive_module_code.h): LibTorch would crash on some.
void check_torch_archive(const std::filesystem::path& path);

/// Reads only the training state.
TrainingState read_checkpoint_state(const std::filesystem::path& path);

/// Loads the method's state (which shapes its model), then its parameters, and restores torch's CPU RNG and,
/// for a model on a GPU, that GPU's generator (saved with checkpoints written on one).
/// Checkpoints written before methods kept their own state (keys at the top level) load too. Refused with
/// an error naming the file, never loaded in part: a checkpoint of another store or run (when `store_id`
/// is given and the checkpoint records its owner), a parameter whose saved shape differs from the model's
/// (another configuration), and model tensors that do not match the checksum saved with them (damage).
/// `saved_optimizer`, when given, receives the checkpoint's optimiser state (std::nullopt when it has none), read with
/// the rest: a resume hands it to its optimiser once that is made, instead of reading the whole file a second time
/// (LibTorch reads an archive whole: the model and shortlists were held twice, the peak of a resumed run at 1.3M labels).
TrainingState load_checkpoint(const std::filesystem::path& path, MethodState& method, std::int64_t num_labels, const std::string& store_id = {},
                              std::int64_t run_id = 0, std::optional<torch::serialize::InputArchive>* saved_optimizer = nullptr);

/// Loads the optimiser state saved with the checkpoint into `optimizer`, when there is one; returns
/// whether there was.
bool load_optimizer_state(const std::filesystem::path& path, torch::optim::Optimizer& optimizer);
/// Loads optimiser state that load_checkpoint kept from checkpoint `path` into `optimizer`; errors name `path`.
void load_optimizer_state(torch::serialize::InputArchive& saved, const std::filesystem::path& path, torch::optim::Optimizer& optimizer);

}  // namespace xmc
