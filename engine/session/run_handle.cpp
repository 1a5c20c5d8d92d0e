#include "engine/session/run_handle.h"

#include "engine/core/error.h"
#include "engine/session/local_workers.h"
#include "engine/train/training_run.h"

namespace xmc {

RunHandle::RunHandle(std::unique_ptr<TrainingRun> run, TrainingProcesses processes, DistributedOptions distributed)
    : run_(std::move(run)), processes_(std::move(processes)), distributed_(std::move(distributed)) {}
RunHandle::~RunHandle() = default;
RunHandle::RunHandle(RunHandle&&) noexcept = default;
RunHandle& RunHandle::operator=(RunHandle&&) noexcept = default;

std::int64_t RunHandle::run_id() const { return run_->run_id(); }
const TrainConfig& RunHandle::config() const { return run_->config(); }
void RunHandle::subscribe(std::function<void(const TrainEvent&)> listener) { run_->subscribe(std::move(listener)); }
void RunHandle::request_stop() { run_->request_stop(); }
void RunHandle::set_paused(bool paused) { run_->set_paused(paused); }
TrainResult RunHandle::run(Progress& progress) {
  if (processes_.local <= 1) return run_->run(progress);
  const auto binary = processes_.worker_binary.empty() ? default_worker_binary() : processes_.worker_binary;
  LocalWorkers workers(binary, distributed_);
  run_->describe_peers_with([&workers] { return workers.failures(std::chrono::seconds(2)); });
  TrainResult result;
  try {
    result = run_->run(progress);
  } catch (...) {
    run_->describe_peers_with({});
    throw;  // the workers are ended as `workers` goes
  }
  run_->describe_peers_with({});
  // The workers end right after the last step; one that failed after it is worth saying, though the run is complete.
  if (const std::string failed = workers.wait_all(); !failed.empty())
    throw Error("run " + std::to_string(run_->run_id()) + " trained to its end, but " + failed);
  return result;
}

}  // namespace xmc
