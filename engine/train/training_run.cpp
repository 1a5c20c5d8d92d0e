#include "engine/train/training_run.h"

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/train/evaluation_pass.h"
#include "engine/train/run_recorder.h"
#include "engine/train/trainer.h"

namespace xmc {
namespace {

std::string default_run_name(const TrainConfig& c) {
  return c.method + " " + c.encoder_type + " " + c.loss + " on " + std::filesystem::path(c.dataset).filename().string();
}

}  // namespace

/// A run in the store: the trainer does the work, the recorder writes what it publishes.
struct TrainingRun::Impl {
  TrainConfig config;
  std::int64_t run_id = 0;
  RunRecorder recorder;
  Trainer trainer;

  Impl(TrainConfig c, const std::filesystem::path& db, std::int64_t id, bool resume, std::string fingerprint)
      : config(c), run_id(id), recorder(db, id), trainer(TrainerSetup{.config = std::move(c),
                                                                        .run_dir = xmc::run_directory(db, id),
                                                                        .run_id = id,
                                                                        .resume = resume,
                                                                        .expected_fingerprint = std::move(fingerprint)}) {
    trainer.subscribe([this](const TrainEvent& e) { recorder.record(e); });
  }
};

TrainingRun::TrainingRun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TrainingRun::TrainingRun(TrainConfig config, const std::filesystem::path& db_path) {
  validate(config);
  check_eval_index(config.eval_index);  // before the run is recorded: a typo must not leave a failed run behind
  if (config.name.empty()) config.name = default_run_name(config);
  NewRun run;
  run.name = config.name;
  run.config_json = to_json(config);
  run.dataset_path = std::filesystem::absolute(config.dataset).string();
  run.dataset_fingerprint = dataset_fingerprint(config.dataset);
  run.device = config.device;
  const std::int64_t id = RunStore(db_path).create_run(run);
  impl_ = std::make_unique<Impl>(std::move(config), db_path, id, /*resume=*/false, std::string{});
}

TrainingRun TrainingRun::resume(std::int64_t run_id, const std::filesystem::path& db_path, const std::vector<std::string>& overrides) {
  RunStore store(db_path);
  const RunInfo info = store.get_run(run_id);
  if (info.status == RunStatus::Completed) throw ConfigError("run " + std::to_string(run_id) + " is already completed");
  if (info.status == RunStatus::Running) {
    store.reap_orphaned_runs();
    if (store.get_run(run_id).status == RunStatus::Running)
      throw ConfigError("run " + std::to_string(run_id) + " is running in process " + std::to_string(info.pid) + " on " + info.host);
  }
  TrainConfig config = parse_train_config(info.config_json, "run " + std::to_string(run_id) + " config");
  const TrainConfig before = config;
  apply_config_overrides(config, overrides);
  // Keys that shape the model or the data cannot change under a checkpoint.
  if (config.dataset != before.dataset || config.encoder_type != before.encoder_type || config.encoder_dim != before.encoder_dim ||
      config.encoder_path != before.encoder_path || config.method != before.method || config.batch_size != before.batch_size)
    throw ConfigError("resume: dataset, method, encoder.* and batch_size cannot change when resuming a run");
  const auto checkpoint = checkpoint_file(run_directory(db_path, run_id));
  if (!std::filesystem::exists(checkpoint))
    throw ConfigError("run " + std::to_string(run_id) + " has no checkpoint to resume from (" + checkpoint.string() + ")");
  return TrainingRun(std::make_unique<Impl>(std::move(config), db_path, run_id, /*resume=*/true, info.dataset_fingerprint));
}

TrainingRun::~TrainingRun() = default;
TrainingRun::TrainingRun(TrainingRun&&) noexcept = default;
TrainingRun& TrainingRun::operator=(TrainingRun&&) noexcept = default;

std::int64_t TrainingRun::run_id() const { return impl_->run_id; }
const TrainConfig& TrainingRun::config() const { return impl_->config; }
void TrainingRun::subscribe(std::function<void(const TrainEvent&)> listener) { impl_->trainer.subscribe(std::move(listener)); }
void TrainingRun::request_stop() { impl_->trainer.request_stop(); }
void TrainingRun::set_paused(bool paused) { impl_->trainer.set_paused(paused); }
TrainResult TrainingRun::run(Progress& progress) { return impl_->trainer.run(progress); }

std::filesystem::path TrainingRun::run_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  return xmc::run_directory(db_path, run_id);
}

}  // namespace xmc
