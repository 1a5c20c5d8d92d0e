#include "engine/train/run_events.h"

namespace xmc {

void RunEvents::publish(TrainEvent event) {
  event.run_id = run_id_;
  if (event.step == 0) event.step = step_;
  for (const auto& listener : listeners_) listener(event);
}

void RunEvents::publish(TrainEvent::Kind kind, std::string message) {
  TrainEvent e;
  e.kind = kind;
  e.message = std::move(message);
  publish(std::move(e));
}

void RunEvents::system_use(double epoch, bool force) {
  // A sample at the step of the last one (the finish after the last epoch's end) replaces it in the store, so
  // its CPU rate spans both intervals.
  auto sample = system_use_.sample(force, /*replacing=*/step_ == last_system_use_step_);
  if (sample.empty()) return;
  last_system_use_step_ = step_;
  TrainEvent e;
  e.kind = TrainEvent::Kind::SystemUse;
  e.epoch = epoch;
  e.metrics = std::move(sample);
  publish(std::move(e));
}

void RunEvents::restored(std::int64_t step, double epoch) {
  TrainEvent e;
  e.kind = TrainEvent::Kind::Restored;
  e.step = step;
  e.epoch = epoch;
  publish(std::move(e));
}

void RunEvents::setting_chosen(const std::string& key, double value, double epoch) {
  TrainEvent e;
  e.kind = TrainEvent::Kind::SettingChosen;
  e.message = key;
  e.value = value;
  e.epoch = epoch;
  publish(std::move(e));
}

void RunEvents::step(const std::string& stage, const std::string& loss_series, std::int64_t total_steps, double epoch, double loss, double lr,
                     double batch_rows, std::chrono::steady_clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  TrainEvent e;
  e.kind = TrainEvent::Kind::Step;
  e.total_steps = total_steps;
  e.epoch = epoch;
  e.stage = stage;
  e.loss_series = loss_series;
  e.loss = loss;
  e.lr = lr;
  e.samples_per_s = seconds > 0 ? batch_rows / seconds : 0;
  publish(std::move(e));
  system_use(epoch, false);
}

void RunEvents::epoch_end(const std::string& stage, double epoch, std::int64_t samples, double seconds) {
  TrainEvent e;
  e.kind = TrainEvent::Kind::EpochEnd;
  e.epoch = epoch;
  e.stage = stage;
  e.samples_per_s = seconds > 0 ? static_cast<double>(samples) / seconds : 0;
  publish(std::move(e));
  system_use(epoch, true);
}

void RunEvents::ended(bool completed, double epoch, std::string message, const EvalResult* final) {
  system_use(epoch, true);  // the peak, the final evaluation's included
  TrainEvent e;
  e.kind = completed ? TrainEvent::Kind::Finished : TrainEvent::Kind::Stopped;
  if (final != nullptr) {
    e.metrics = final->metrics;
    if (auto it = final->deciles.find("P@5"); it != final->deciles.end()) e.deciles = it->second;
  }
  e.message = std::move(message);
  publish(std::move(e));
}

}  // namespace xmc
