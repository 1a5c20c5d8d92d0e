#include "engine/train/trainer.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>

#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/method/checkpoint.h"
#include "engine/method/checkpoint_policy.h"
#include "engine/optim/stage_optimizer.h"
#include "engine/sampler/query_batcher.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/store/run_files.h"
#include "engine/train/data_parallel_steps.h"
#include "engine/train/epoch_axis.h"
#include "engine/train/fitted_epoch.h"
#include "engine/train/negatives_snapshots.h"
#include "engine/train/run_control.h"
#include "engine/train/run_events.h"
#include "engine/train/run_inputs.h"
#include "engine/train/run_evaluation.h"
#include "engine/train/set_aside_tensors.h"
#include "engine/train/step_prefetcher.h"
#include "engine/train/stoppable_progress.h"
#include "engine/train/training_failure.h"
#include "engine/train/training_process.h"

namespace xmc {
using Clock = std::chrono::steady_clock;

struct Trainer::Impl {
  TrainerSetup setup;
  const TrainConfig& config;
  RunControl control;  ///< the user's stop and pause

  RunInputs in;  ///< the dataset, the method, its stages, the corpora and the training rows
  std::unique_ptr<QueryBatcher> batcher;
  /// Sampled positives and hard negatives of the label pools: a stream of its own, so that how batches
  /// are drawn and how their label pools are drawn never shift each other.
  std::mt19937_64 label_pool_rng;
  /// The next batch, prepared while the current one trains (it draws from label_pool_rng).
  StepPrefetcher prefetcher{label_pool_rng};
  std::unique_ptr<StageOptimizer> optimizer;  ///< the current stage's (null between stages)
  /// A resumed run's optimiser state, kept from the checkpoint's reading until the stage's optimiser is made.
  std::optional<torch::serialize::InputArchive> resumed_optimizer_state;
  TrainingState state;
  RunEvents events{state.step};
  EpochAxis epochs;                  ///< set once the method is known
  CheckpointPolicy checkpoints{{}};  ///< set from the config in prepare() (a worker's is rank 0's)
  torch::Device device = torch::kCPU;
  DataParallelSteps steps;  ///< this process's share of each step, in a job agreed with the others
  std::unique_ptr<RunEvaluation> evaluations;
  std::unique_ptr<NegativesSnapshots> snapshots;
  EvalResult last_eval;
  std::vector<std::pair<std::string, EvalResult>> last_modes;  ///< every mode of the last evaluation, primary first
  ReportOnlyProgress reporter;  ///< forwards to the caller's progress display for the current run()
  /// Set (to why) when the state set aside during an evaluation could not be read back: checkpoints are refused.
  std::string training_state_lost;

  explicit Impl(TrainerSetup s) : setup(std::move(s)), config(setup.config) {
    keep_freed_memory_for_reuse();
    run_blas_on_calling_thread();
    events.set_run_id(setup.run_id);
  }

  std::filesystem::path checkpoint_path() const { return checkpoint_file(setup.run_dir); }
  const std::function<void(const std::string&)>& log() const { return events.log(); }
  void phase(const std::string& message) { events.phase(message); }

  TrainContext context() {
    return TrainContext{.dataset = in.dataset, .train_corpus = in.train_corpus, .label_corpus = in.label_corpus, .device = device,
                        .distributed = steps.context(), .batcher = *batcher, .label_pool_rng = label_pool_rng, .progress = reporter,
                        .phase = log(), .chose = [this](const std::string& key, double value) { events.setting_chosen(key, value, epochs.at(state)); }};
  }

  // ---- set-up ---------------------------------------------------------------------------------

  /// Joins the process group (distributed/training_job.h); a rank other than 0 takes rank 0's run from it.
  void join_process_group() {
    JoinedJob job = steps.join({.options = setup.distributed, .config = config, .run_id = setup.run_id, .store_id = setup.store_id,
                                .resume = setup.resume, .checkpoint = checkpoint_path(), .phase = log()});
    setup.config = std::move(job.config);
    setup.run_id = job.run_id;
    setup.store_id = job.store_id;
    setup.resume = job.resume;
    events.set_run_id(setup.run_id);
  }

  void prepare(Progress& progress) {
    if (setup.distributed.enabled()) join_process_group();
    device = set_up_training_process(config, setup.distributed.local_world_size, setup.distributed.rank == 0, setup.run_dir, log());
    if (!setup.resume) torch::manual_seed(config.seed);
    in = load_run_inputs(config, {.run_id = setup.run_id, .expected_fingerprint = setup.expected_fingerprint, .run_dir = setup.run_dir,
                                  .store = setup.store, .distributed = steps.enabled(), .threads = at::get_num_threads()}, progress, log());
    epochs = EpochAxis(in.stages, in.method->name(), checkpoint_path());
    batcher = std::make_unique<QueryBatcher>(make_batch_order(component_config(config)), config.batch_size, in.training_rows, config.seed);
    label_pool_rng.seed(config.seed ^ 0x6c6162656c706f6fULL);  // "labelpoo": any fixed offset from the batcher's seed
    evaluations = std::make_unique<RunEvaluation>(in.dataset, config, in.held_out_rows, log());
    snapshots = std::make_unique<NegativesSnapshots>(in.dataset, config.tsne_query, config.tsne_every, config.seed, in.training_rows, in.held_out_rows);
    // Only the training queries' tokens are read from here on: their texts (0.8 GB at 2.25M synthetic queries of
    // ~50 words) are not held through training. Freed as millions of small blocks, their pages go back to the
    // system only when asked for (so do the vocabulary's copy of every text and the test queries' texts).
    std::vector<std::string>().swap(in.dataset.train_text);
    return_freed_memory();

    state.stage = in.stages.empty() ? kAllStagesDone : in.stages.front().name;
    if (setup.resume) resume_from_checkpoint();
    checkpoints = CheckpointPolicy(
        {.every_epochs = config.checkpoint_every, .every_steps = config.checkpoint_every_steps, .every_minutes = config.checkpoint_every_minutes});
    checkpoints.written_at(state.step);
    steps.begin_training(*in.method, config.seed);
    if (!setup.resume && setup.restart) events.restored(0, 0);  // a run that never reached a checkpoint starts over
  }

  void resume_from_checkpoint() {
    state = load_checkpoint(checkpoint_path(), *in.method, in.dataset.num_labels(), setup.store_id, setup.run_id, &resumed_optimizer_state);
    // The checkpoint's archive, read whole, is freed but for the optimiser's part: its pages go back to the system
    // before the optimiser is made.
    return_freed_memory();
    check_resumable(state, in.stages, in.dataset.num_train(), in.method->gradient_steps() != nullptr, in.method->name(), checkpoint_path());
    if (state.stage.empty()) state.stage = in.stages.front().name;
    batcher->load_state(state.sampler_state);
    if (!state.label_pool_rng.empty()) read_random_stream(state.label_pool_rng, label_pool_rng, checkpoint_path());
    phase("resumed from " + checkpoint_path().string() + " at step " + std::to_string(state.step));
    events.restored(state.step, epochs.at(state));
  }

  // ---- evaluation -----------------------------------------------------------------------------

  /// Applies the optimiser's deferred row updates (FusedAdamW::defer_untouched_rows): before anything reads the
  /// parameters outside a training step.
  void bring_rows_up_to_date() {
    if (optimizer) optimizer->bring_rows_up_to_date();
  }

  /// Every inference mode of the method, ranked over the test set. `final`: the run's last evaluation,
  /// which always gets a t-SNE snapshot when snapshots are on; others get one every tsne.every evaluations.
  EvalResult evaluate(double epoch, bool final = false) {
    bring_rows_up_to_date();
    if (!steps.is_main()) {  // rank 0 evaluates; the others wait for it
      steps.hold_for_main("evaluation");
      return {};
    }
    // A stop asked for now ends the evaluation at its next slice of test queries, without recording it (a user
    // would otherwise wait out a 20-minute evaluation for a Ctrl-C). Several processes stop only at a step, together.
    const StoppableWork stoppable(reporter, !steps.enabled());
    // The optimiser's moments and the method's shortlists, which an evaluation never reads, are written to a file
    // beside the checkpoint and freed while it runs, when they take at least eval.set_aside_mb: the evaluation's
    // label matrices then take their place rather than coming on top (UniDEC at 1.3M labels: 2.1 GB of 8.9). They
    // are back before a stop or a failure writes a checkpoint; nothing prepared ahead reads a shortlist meanwhile.
    std::vector<torch::Tensor> idle = in.method->idle_during_evaluation();
    if (optimizer)
      for (torch::Tensor& moment : optimizer->adamw().moments()) idle.push_back(std::move(moment));
    EvalResult result;
    try {
      result = with_set_aside(std::move(idle), config.eval_set_aside_mb, evaluation_set_aside_file(setup.run_dir), [this] { prefetcher.drop(); }, log(), training_state_lost,
                              [&] { return evaluate_on_main(epoch, final); });
    } catch (const Cancelled&) {
      throw EvaluationStopped{.final = final};
    }
    // The others go on once rank 0 is done (when its evaluation fails, rank 0 ends, and they with it).
    steps.hold_for_main("evaluation");
    return result;
  }

  EvalResult evaluate_on_main(double epoch, bool final) {
    // IRENE's modes score subsets by test row, so it always ranks them all.
    RunEvaluationResult result = evaluations->evaluate(*in.method, in.test_corpus, in.label_corpus, in.train_corpus, final, in.method->builds_on_another_run(), epoch,
                                                       reporter, log());
    events.publish(result.event);
    for (const auto& [key, value] : result.chosen) events.setting_chosen(key, value, epoch);
    last_eval = result.primary();
    last_modes = result.named_results();
    if (snapshots->due_after_evaluation(final) && result.training_space)
      snapshots->take(*in.method, result.evaluation.modes[*result.training_space], in.train_corpus, state.epoch_batches, epoch, state.step, log(),
                      [this](TrainEvent e) { events.publish(std::move(e)); });
    return last_eval;
  }

  // ---- checkpoints ----------------------------------------------------------------------------

  void checkpoint() {
    if (!training_state_lost.empty())
      throw Error("no checkpoint written: the training state set aside during the evaluation was not read back (" + training_state_lost + ")");
    bring_rows_up_to_date();  // a resumed run starts with every row up to date
    if (!steps.is_main()) return;  // rank 0 writes the run's checkpoints
    state.sampler_state = batcher->save_state();
    // A batch prepared ahead has drawn from the label-pool stream: the checkpoint keeps the stream as it stood
    // before that batch, which a resumed run prepares again; this run trains the one prepared.
    state.label_pool_rng = random_stream_text(prefetcher.stream_before_in_flight());
    state.store_id = setup.store_id;
    state.run_id = setup.run_id;
    // Announced first: the recorder stores every step up to this one before the file can exist, so a
    // resume from it never misses a recorded step.
    events.publish(TrainEvent::Kind::Checkpoint, checkpoint_path().string());
    save_checkpoint(checkpoint_path(), *in.method, optimizer ? &optimizer->adamw() : nullptr, state);
    checkpoints.written_at(state.step);
  }

  // ---- one stage ------------------------------------------------------------------------------

  /// The method's batches for `epoch`. A stop asked for while they are made (a clustering, a shortlist refresh:
  /// 10 minutes at 2.25M queries) ends them when the method can make them again: the sampler goes back to where
  /// it stood, and the checkpoint resumes at the epoch's start. Several processes stop only at a step, together.
  std::vector<std::vector<std::int64_t>> epoch_batches_or_stop(const StageSpec& stage, std::int64_t epoch, TrainContext& ctx) {
    const bool can_stop = !steps.enabled() && gradient().epoch_batches_can_stop();
    const std::string sampler_before = can_stop ? batcher->save_state() : std::string();
    const StoppableWork stoppable(reporter, can_stop);
    try {
      return gradient().epoch_batches(stage, epoch, ctx);
    } catch (const Cancelled&) {
      if (!can_stop) throw;
      batcher->load_state(sampler_before);
      throw EpochStartStopped{};
    }
  }

  /// Trains stage `index` from state.epoch/batch_in_epoch to its end; returns false when max_steps stopped it.
  bool train_stage(std::size_t index, Progress& progress) {
    const StageSpec& stage = in.stages[index];
    TrainContext ctx = context();
    begin_stage(stage, ctx);
    for (; state.epoch < stage.epochs; ++state.epoch) {
      // Stop before drawing the next epoch's batches, so a resumed run draws exactly the same ones.
      if (config.max_steps > 0 && state.step >= config.max_steps) return false;
      StageFitting* fitting = in.method->stage_fitting();
      if (!(fitting ? fit_epoch(*fitting, stage, index, ctx, progress) : train_epoch(stage, index, ctx, progress))) return false;
      end_epoch(stage, index);
    }
    return true;
  }

  GradientSteps& gradient() { return *in.method->gradient_steps(); }

  /// The stage's start: the method's, rank 0's parameters everywhere, the stage's optimiser (a resumed one's state).
  void begin_stage(const StageSpec& stage, TrainContext& ctx) {
    in.method->begin_stage(stage, ctx);
    if (in.method->stage_fitting() != nullptr) {  // fitted without gradients: no optimiser; the method's state says how far it got
      resumed_optimizer_state.reset();
      setup.resume = false;
      return;
    }
    // A stage may add parameters (NGAME's classifiers, UniDEC's table, randomly initialised per rank): every
    // rank starts it from rank 0's.
    if (steps.enabled()) steps.share_parameters(*in.method);
    const std::int64_t own = gradient().batches_per_epoch(stage);
    const std::int64_t per_epoch =
        own >= 0 ? own : std::max<std::int64_t>(1, batch_count(static_cast<std::int64_t>(in.training_rows.size()), config.batch_size));
    optimizer = make_stage_optimizer(gradient().parameter_groups(stage), component_config(config),
                                     {.total_steps = per_epoch * stage.epochs, .clip_gradients = stage.clip_gradients, .may_defer_rows = !steps.enabled(), .phase = log()});
    steps.begin_stage(optimizer->parameters(), config.distributed_overlap == "on");
    // Resumed inside this stage: continue its optimiser (a checkpoint at a stage boundary has none).
    if (setup.resume) {
      // The optimiser's state as the checkpoint's reading kept it (the file is not read again).
      if (resumed_optimizer_state) load_optimizer_state(*resumed_optimizer_state, checkpoint_path(), optimizer->adamw());
      resumed_optimizer_state.reset();
      // The optimiser's state made before the saved one replaced it is freed: its pages go back to the system
      // instead of staying in the heap through training.
      return_freed_memory();
    }
    setup.resume = false;
  }

  /// The current epoch's task ("epoch 2/5"), announced.
  std::string epoch_task(const StageSpec& stage) {
    const std::string task = stage.epoch_label + " " + std::to_string(state.epoch + 1) + "/" + std::to_string(stage.epochs);
    phase(task);
    return task;
  }

  /// Before a step (or a fitted part): waits out a pause, stops on request, writes a checkpoint that is due (it resumes
  /// here); false once max_steps is reached.
  bool ready_for_step(bool defers_rows, bool rows_synced_here) {
    if (steps.hold_or_stop_before_step([this] { control.wait_while_paused(events); }, control.stop_requested)) throw StopRequested{};
    if (checkpoints.due_within_epoch(state.step, defers_rows, rows_synced_here)) checkpoint();
    return config.max_steps <= 0 || state.step < config.max_steps;
  }

  /// Trains the current epoch's batches from state.batch_in_epoch; returns false when max_steps stopped it.
  bool train_epoch(const StageSpec& stage, std::size_t index, TrainContext& ctx, Progress& progress) {
    // A checkpoint written after the batches were drawn but before the first step (a stop or a time-placed
    // checkpoint at batch 0) holds them: the resume trains on those, as from any other batch, not on a new draw.
    if (state.batch_in_epoch == 0 && state.epoch_batches.empty()) {
      bring_rows_up_to_date();  // the epoch's clustering and shortlist refresh read the model
      state.epoch_batches = epoch_batches_or_stop(stage, state.epoch, ctx);
      // The clustering's query embeddings and the refresh's label index and search buffers are freed by now: their
      // pages go back to the system instead of staying in the heap through the epoch (1.2 GB at 2.25M queries).
      return_freed_memory();
      if (steps.enabled()) steps.share_batches(state.epoch_batches);
    }
    const auto batches = static_cast<std::int64_t>(state.epoch_batches.size());
    const std::string epoch_task = this->epoch_task(stage);
    progress.start(epoch_task, batches);
    in.method->module().train();
    const auto epoch_start = Clock::now();
    std::int64_t samples = 0;
    // The prefetcher prepares the next batch while the current one trains (config prefetch), for a method that
    // prepares batches; it is emptied whenever the loop is left.
    prefetcher.begin_epoch(config.prefetch == "on" || (config.prefetch == "auto" && device.is_cuda()));
    struct DropPrefetched {
      StepPrefetcher& prefetcher;
      ~DropPrefetched() { prefetcher.drop(); }
    } drop_prefetched{prefetcher};
    const auto prepare = [this, &stage, &ctx](std::int64_t i) {
      return gradient().prepare_step(stage, steps.rows(gradient(), stage, state.epoch_batches[static_cast<std::size_t>(i)]), ctx);
    };
    for (; state.batch_in_epoch < batches; ++state.batch_in_epoch) {
      // Every run brings its deferred rows up to date at the same steps, whether a checkpoint falls there or not.
      const bool synced_here = optimizer->syncs_rows_at(state.step);
      if (synced_here) bring_rows_up_to_date();
      if (!ready_for_step(optimizer->syncs_deferred_rows(), synced_here)) return false;
      const auto& batch = state.epoch_batches[static_cast<std::size_t>(state.batch_in_epoch)];
      const auto step_start = Clock::now();
      const std::shared_ptr<PreparedBatch> prepared = prefetcher.prepared(state.batch_in_epoch, batches, prepare);
      steps.seed_step(config.seed, state.step);
      const StepResult result = steps.train_step(gradient(), stage, batch, prepared.get(), ctx, optimizer->parameters(), control.stop_requested, control.paused);
      check_finite_loss(result.loss, state.step, epoch_task, config);
      const double lr = optimizer->step(state.step - state.stage_start_step);
      ++state.step;
      samples += static_cast<std::int64_t>(batch.size());
      events.step(stage.name, stage.loss_series, optimizer->schedule().total_steps, epochs.after_batch(state), result.loss, lr,
                  static_cast<double>(batch.size()), Clock::now() - step_start);
      progress.update(state.batch_in_epoch + 1);
    }
    progress.finish();
    events.epoch_end(stage.name, epochs.offset(index) + static_cast<double>(state.epoch + 1), samples,
                     std::chrono::duration<double>(Clock::now() - epoch_start).count());
    return true;
  }

  /// Fits the current epoch of a stage trained without gradients; returns false when max_steps stopped it.
  bool fit_epoch(StageFitting& fitting, const StageSpec& stage, std::size_t index, TrainContext& ctx, Progress& progress) {
    const FittedEpochHooks hooks{.ready_for_part = [this](std::int64_t part) { state.batch_in_epoch = part; return ready_for_step(false, false); },
                                 .fitted = [&](std::int64_t part, std::int64_t total, double objective, Clock::duration took) {
                                   ++state.step;
                                   const double at = epochs.offset(index) + static_cast<double>(state.epoch) + static_cast<double>(part + 1) / static_cast<double>(total);
                                   events.step(stage.name, stage.loss_series, total * stage.epochs, at, objective, /*lr=*/std::numeric_limits<double>::quiet_NaN(), 0, took);
                                 }};
    if (!xmc::fit_epoch(fitting, stage, ctx, epoch_task(stage), progress, hooks)) return false;
    events.epoch_end(stage.name, epochs.offset(index) + static_cast<double>(state.epoch + 1), 0, 0);
    return true;
  }

  /// After an epoch's last step: its batches kept for the t-SNE snapshot, then the evaluation and checkpoint it is
  /// due (neither after a stage's last epoch: the stage's end has its own).
  void end_epoch(const StageSpec& stage, std::size_t index) {
    const std::int64_t epoch = state.epoch;
    state.batch_in_epoch = 0;
    snapshots->epoch_ended(std::move(state.epoch_batches));
    state.epoch_batches.clear();
    const bool last = epoch + 1 == stage.epochs;
    if (!last && stage.evaluate_between_epochs && config.eval_every > 0 && (epoch + 1) % config.eval_every == 0) {
      try {
        evaluate(epochs.offset(index) + static_cast<double>(epoch + 1));
      } catch (const EvaluationStopped&) {
        ++state.epoch;  // the epoch is done: the checkpoint resumes at the next one
        throw;
      }
    }
    if (checkpoints.due_after_epoch(epoch + 1, last)) {
      ++state.epoch;  // the checkpoint resumes at the next epoch
      checkpoint();
      --state.epoch;
    }
  }

  /// The stage is done: the method's end of it, then the next one starts at its first epoch, with its own schedule.
  void end_stage(std::size_t index) {
    bring_rows_up_to_date();
    TrainContext ctx = context();
    in.method->end_stage(in.stages[index], ctx);
    state.stage = index + 1 < in.stages.size() ? in.stages[index + 1].name : kAllStagesDone;
    state.epoch = 0;
    state.batch_in_epoch = 0;
    state.stage_start_step = state.step;
    // The stage's optimiser is done with (the next stage makes its own): its moments, twice the model, go
    // before the evaluation, and the allocator, which keeps freed blocks for reuse while training, hands their
    // pages back, so that the evaluation's label matrices do not come on top of them.
    optimizer.reset();
    return_freed_memory();
  }

  // ---- the whole run --------------------------------------------------------------------------

  TrainResult run(Progress& progress) {
    reporter.target = &progress;
    reporter.stop_requested = &control.stop_requested;
    try {
      events.publish(TrainEvent::Kind::Started);
      events.start_clock();
      prepare(progress);
      for (std::size_t index = epochs.stage_index(state.stage); index < in.stages.size(); index = epochs.stage_index(state.stage)) {
        if (!train_stage(index, progress)) {
          // Stopped by max_steps: a resumable checkpoint, then the final evaluation of where it got to.
          checkpoint();
          return finish(evaluate(epochs.at(state), /*final=*/true), /*completed=*/false);
        }
        end_stage(index);
        if (index + 1 < in.stages.size()) {
          if (in.stages[index].evaluate_at_end) evaluate(epochs.offset(index + 1));
          checkpoint();  // resume point: the next stage starts from here
        }
      }
      EvalResult result = evaluate(epochs.offset(in.stages.size()), /*final=*/true);
      checkpoint();
      return finish(result, /*completed=*/true);
    } catch (const StopRequested& stopped) {
      return stopped_on_request(stopped.outcome(state.step));
    } catch (const EpochStartStopped& stopped) {
      return stopped_on_request(stopped.outcome(state.step, state.epoch));
    } catch (const EvaluationStopped& stopped) {
      return stopped_on_request(stopped.outcome(state.step));
    } catch (const std::exception& e) {
      progress.finish();
      const std::string message = describe_training_failure(e, state.step, config, setup.describe_peers);
      events.publish(TrainEvent::Kind::Failed, message);
      // A worker that never heard from rank 0 does not know the run's id.
      throw Error((setup.run_id > 0 ? "run " + std::to_string(setup.run_id) + " failed: " : std::string()) + message);
    }
  }

  TrainResult stopped_on_request(const std::string& message) {
    reporter.finish();
    checkpoint();
    events.ended(/*completed=*/false, epochs.at(state), message);
    return {RunOutcome::Stopped, last_eval, last_modes};
  }

  TrainResult finish(const EvalResult& result, bool completed) {
    events.ended(completed, epochs.at(state),
                 completed ? "completed" : "stopped after max_steps = " + std::to_string(config.max_steps) + " (checkpoint written)", &result);
    return {completed ? RunOutcome::Completed : RunOutcome::Stopped, result, last_modes};
  }
};

Trainer::Trainer(TrainerSetup setup) : impl_(std::make_unique<Impl>(std::move(setup))) {}
Trainer::~Trainer() = default;
void Trainer::subscribe(std::function<void(const TrainEvent&)> listener) { impl_->events.subscribe(std::move(listener)); }
void Trainer::request_stop() { impl_->control.stop_requested.store(true); }
void Trainer::set_paused(bool paused) { impl_->control.paused.store(paused); }
void Trainer::describe_peers_with(std::function<std::string()> describe) { impl_->setup.describe_peers = std::move(describe); }
TrainResult Trainer::run(Progress& progress) { return impl_->run(progress); }

}  // namespace xmc
