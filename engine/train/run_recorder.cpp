#include "engine/train/run_recorder.h"

#include <cmath>

#include "engine/records/chosen_settings.h"

namespace xmc {

RunRecorder::RunRecorder(RunStore& store, std::int64_t run_id) : store_(store), run_id_(run_id) {}

void RunRecorder::flush() {
  if (pending_.empty()) return;
  store_.add_scalars(run_id_, pending_);
  store_.heartbeat(run_id_);
  pending_.clear();
  last_flush_ = std::chrono::steady_clock::now();
}

void RunRecorder::flush_if_due() {
  if (std::chrono::steady_clock::now() - last_flush_ >= std::chrono::seconds(2)) flush();
}

void RunRecorder::record_step(const TrainEvent& e) {
  const double now = RunStore::now_seconds();
  if (std::isfinite(e.lr)) pending_.push_back({e.step, e.epoch, "lr", e.lr, now});  // a fitted part has none (stage_fitting.h)
  if (!e.loss_series.empty() && std::isfinite(e.loss)) {  // a step with a loss (training_stages.h)
    pending_.push_back({e.step, e.epoch, e.loss_series, e.loss, now});
    if (e.samples_per_s > 0) pending_.push_back({e.step, e.epoch, "samples_per_s", e.samples_per_s, now});
  }
  flush_if_due();
}

void RunRecorder::record_evaluation(const TrainEvent& e) {
  if (!e.mode_metrics.empty()) store_.add_evaluation(run_id_, e.epoch, e.step, e.mode_metrics);
  store_.add_evaluation(run_id_, e.epoch, e.step, e.metrics);
  for (const auto& [metric, bins] : e.decile_tables) store_.add_decile_table(run_id_, e.epoch, metric, bins);
  const double now = RunStore::now_seconds();
  store_.add_scalars(run_id_, {{e.step, e.epoch, "score_spread", e.score_spread, now},
                               {e.step, e.epoch, "score_mean", e.score_mean, now},
                               {e.step, e.epoch, "eval_seconds", e.seconds, now}});
}

void RunRecorder::record_system_use(const TrainEvent& e) {
  // Sampled at most every 10 s, but the last epoch's end and the finish share a step: the later wins.
  flush();
  const double now = RunStore::now_seconds();
  std::vector<ScalarPoint> points;
  for (const auto& [key, value] : e.metrics) points.push_back({e.step, e.epoch, key, value, now});
  store_.replace_scalars(run_id_, points);
}

void RunRecorder::record(const TrainEvent& e) {
  using Kind = TrainEvent::Kind;
  switch (e.kind) {
    case Kind::Started:
    case Kind::Resumed:
      store_.set_status(run_id_, RunStatus::Running);
      break;
    case Kind::Paused:
      flush();
      store_.set_status(run_id_, RunStatus::Paused);
      break;
    case Kind::Step:
      record_step(e);
      break;
    case Kind::EpochEnd:
      flush();
      store_.add_scalars(run_id_, {{e.step, e.epoch, "epoch_queries_per_s", e.samples_per_s, RunStore::now_seconds()}});
      break;
    case Kind::Evaluation:
      record_evaluation(e);
      break;
    case Kind::SystemUse:
      record_system_use(e);
      break;
    case Kind::SettingChosen:
      flush();
      store_.add_scalars(run_id_, {{e.step, e.epoch, kChosenSettingPrefix + e.message, e.value, RunStore::now_seconds()}});
      break;
    case Kind::Snapshot:
      store_.add_tsne_snapshot(run_id_, e.epoch, e.query, e.message);
      break;
    case Kind::SnapshotForming:  // only the map it converges to is kept
      break;
    case Kind::Checkpoint:
      flush();  // every step the checkpoint holds is stored before the file exists
      if (!store_.latest_artifact(run_id_, "checkpoint")) store_.add_artifact(run_id_, "checkpoint", e.message);
      break;
    case Kind::Restored:
      pending_.clear();
      store_.discard_after(run_id_, e.step, e.epoch);
      break;
    case Kind::Finished:
      flush();
      store_.set_status(run_id_, RunStatus::Completed);
      break;
    case Kind::Stopped:
      flush();
      store_.set_status(run_id_, RunStatus::Stopped);
      // The log says where and why the run stopped (a user's stop, max_steps), beside its phases.
      store_.add_log_line(run_id_, e.step, e.message.empty() ? std::string("stopped") : e.message);
      break;
    case Kind::Failed:
      try {
        flush();  // keep the steps that were made
      } catch (...) {
      }
      store_.mark_failed(run_id_, e.message);
      break;
    case Kind::Phase:
      // Best effort: a phase can be announced where a failure must not end the run (a t-SNE snapshot's error
      // handler); a store that cannot be written fails the run at the next flush of its steps anyway.
      try {
        store_.add_log_line(run_id_, e.step, e.message);
      } catch (const std::exception&) {
      }
      break;
  }
}

}  // namespace xmc
