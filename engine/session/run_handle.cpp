#include "engine/session/run_handle.h"

#include "engine/train/training_run.h"

namespace xmc {

RunHandle::RunHandle(std::unique_ptr<TrainingRun> run) : run_(std::move(run)) {}
RunHandle::~RunHandle() = default;
RunHandle::RunHandle(RunHandle&&) noexcept = default;
RunHandle& RunHandle::operator=(RunHandle&&) noexcept = default;

std::int64_t RunHandle::run_id() const { return run_->run_id(); }
const TrainConfig& RunHandle::config() const { return run_->config(); }
void RunHandle::subscribe(std::function<void(const TrainEvent&)> listener) { run_->subscribe(std::move(listener)); }
void RunHandle::request_stop() { run_->request_stop(); }
void RunHandle::set_paused(bool paused) { run_->set_paused(paused); }
TrainResult RunHandle::run(Progress& progress) { return run_->run(progress); }

}  // namespace xmc
