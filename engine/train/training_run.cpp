#include "engine/train/training_run.h"

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/train/evaluation_pass.h"
#include "engine/train/run_recorder.h"
#include "engine/train/trainer.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"

namespace xmc {
namespace {

std::string default_run_name(const TrainConfig& c) {
  if (!method_info(c.method).trains_encoder) return c.method + " on " + std::filesystem::path(c.dataset).filename().string();
  return c.method + " " + c.get<EncoderOptions>().type + " " + c.get<LossOptions>().kind + " on " + std::filesystem::path(c.dataset).filename().string();
}

}  // namespace

/// A run in the store: the trainer does the work, the recorder writes what it publishes.
/// The run's store is opened once: the recorder writes through it and a method built on another run
/// reads that run through it.
struct TrainingRun::Impl {
  TrainConfig config;
  std::int64_t run_id = 0;
  std::unique_ptr<RunStore> store;
  RunRecorder recorder;
  Trainer trainer;

  Impl(TrainConfig c, std::unique_ptr<RunStore> opened, std::int64_t id, std::filesystem::path run_dir, bool resume, std::string fingerprint,
       bool restart, const DistributedOptions& distributed)
      : config(c), run_id(id), store(std::move(opened)), recorder(*store, id), trainer(TrainerSetup{.config = std::move(c),
                                                                        .run_dir = std::move(run_dir),
                                                                        .store = store.get(),
                                                                        .run_id = id,
                                                                        .store_id = store->store_id(),
                                                                        .resume = resume,
                                                                        .restart = restart,
                                                                        .expected_fingerprint = std::move(fingerprint),
                                                                        .distributed = distributed}) {
    trainer.subscribe([this](const TrainEvent& e) { recorder.record(e); });
  }
};

TrainingRun::TrainingRun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TrainingRun::TrainingRun(TrainConfig config, const std::filesystem::path& db_path, const DistributedOptions& distributed) {
  validate(distributed);
  check_batch_fits(config.batch_size, distributed);  // before the run is recorded
  validate(config);
  check_eval_index(config.eval_index);  // before the run is recorded: a typo must not leave a failed run behind
  if (config.name.empty()) config.name = default_run_name(config);
  auto store = std::make_unique<RunStore>(db_path);
  // A method built on another run (IRENE) checks it before this run is recorded: a mistake leaves no failed run.
  const ComponentConfig components = component_config(config);
  if (const MethodInfo& method = method_info(config.method); method.base_run && method.check_base_run) {
    const std::int64_t base_id = method.base_run(components);
    const std::optional<RunInfo> base = store->find_run(base_id);
    if (!base) throw ConfigError(config.method + ".base_run: there is no run " + std::to_string(base_id) + " in " + db_path.string());
    method.check_base_run(components, component_config(parse_train_config(base->config_json, "run " + std::to_string(base_id) + " config")),
                          to_string(base->status));
  }
  if (const MethodInfo& method = method_info(config.method); method.check_runs_it_reads) method.check_runs_it_reads(components, *store);
  NewRun run;
  run.name = config.name;
  run.config_json = to_json(config);
  run.dataset_path = std::filesystem::absolute(config.dataset).string();
  run.dataset_fingerprint = dataset_fingerprint(config.dataset);
  run.device = config.device;
  const std::int64_t id = store->create_run(run);
  auto run_dir = fresh_run_directory(db_path, id);
  store->claim_run(id);
  impl_ = std::make_unique<Impl>(std::move(config), std::move(store), id, std::move(run_dir), /*resume=*/false, std::string{}, /*restart=*/false,
                                 distributed);
}

TrainingRun TrainingRun::resume(std::int64_t run_id, const std::filesystem::path& db_path, const std::vector<std::string>& overrides,
                                const DistributedOptions& distributed, bool restart) {
  validate(distributed);
  auto store = std::make_unique<RunStore>(db_path);
  const RunInfo info = store->get_run(run_id);
  if (info.status == RunStatus::Completed) throw ConfigError("run " + std::to_string(run_id) + " is already completed");
  if (info.status == RunStatus::Running || info.status == RunStatus::Paused) store->reap_orphaned_runs();
  TrainConfig config = parse_train_config(info.config_json, "run " + std::to_string(run_id) + " config");
  const TrainConfig before = config;
  apply_config_overrides(config, overrides);
  // Keys that shape the model or the data cannot change under a checkpoint (each component says which).
  check_resume_config(before, config);
  check_batch_fits(config.batch_size, distributed);  // before the run is claimed
  // A run killed before its first checkpoint trains again from the start (what it recorded is discarded),
  // in a fresh folder; a checkpoint is used only from the run's own folder.
  const auto checkpoint = checkpoint_file(run_directory(db_path, run_id));
  const bool has_checkpoint = std::filesystem::exists(checkpoint) && !restart;
  // A run that wrote a checkpoint and lost it would start over without a word: that takes --restart.
  if (!has_checkpoint && !restart && store->latest_artifact(run_id, "checkpoint"))
    throw ConfigError("run " + std::to_string(run_id) + " wrote a checkpoint and " + checkpoint.string() +
                      " is gone: resuming would train it again from step 0 and drop what it recorded; to do that on purpose, "
                      "xmc train --resume " + std::to_string(run_id) + " --restart");
  auto run_dir = has_checkpoint ? verified_run_directory(db_path, run_id) : fresh_run_directory(db_path, run_id);
  // One atomic claim: of two processes resuming the run, one trains it and the other is told who does.
  store->claim_run(run_id);
  return TrainingRun(std::make_unique<Impl>(std::move(config), std::move(store), run_id, std::move(run_dir), /*resume=*/has_checkpoint,
                                            info.dataset_fingerprint, /*restart=*/!has_checkpoint, distributed));
}

TrainingRun::~TrainingRun() = default;
TrainingRun::TrainingRun(TrainingRun&&) noexcept = default;
TrainingRun& TrainingRun::operator=(TrainingRun&&) noexcept = default;

std::int64_t TrainingRun::run_id() const { return impl_->run_id; }
const TrainConfig& TrainingRun::config() const { return impl_->config; }
void TrainingRun::subscribe(std::function<void(const TrainEvent&)> listener) { impl_->trainer.subscribe(std::move(listener)); }
void TrainingRun::request_stop() { impl_->trainer.request_stop(); }
void TrainingRun::set_paused(bool paused) { impl_->trainer.set_paused(paused); }
void TrainingRun::describe_peers_with(std::function<std::string()> describe) { impl_->trainer.describe_peers_with(std::move(describe)); }
TrainResult TrainingRun::run(Progress& progress) { return impl_->trainer.run(progress); }

std::filesystem::path TrainingRun::run_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  return xmc::run_directory(db_path, run_id);
}

}  // namespace xmc
