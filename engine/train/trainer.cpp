#include "engine/train/trainer.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/core/process_usage.h"
#include "engine/data/dataset.h"
#include "engine/distributed/communicator.h"
#include "engine/distributed/gradient_exchange.h"
#include "engine/distributed/overlapped_gradient_reducer.h"
#include "engine/distributed/training_job.h"
#include "engine/loss/loss_options.h"
#include "engine/method/checkpoint.h"
#include "engine/method/checkpoint_policy.h"
#include "engine/method/method_registry.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/image_options.h"
#include "engine/optim/sparse_gradient.h"
#include "engine/optim/stage_optimizer.h"
#include "engine/sampler/query_batcher.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/store/run_files.h"
#include "engine/train/negatives_snapshots.h"
#include "engine/train/run_corpora.h"
#include "engine/train/run_evaluation.h"
#include "engine/train/set_aside_tensors.h"
#include "engine/train/step_prefetcher.h"
#include "engine/train/stoppable_progress.h"

namespace xmc {
namespace {

using Clock = std::chrono::steady_clock;

/// A stop request unwinds the training loop through this (caught in run()).
struct StopRequested {};

bool is_out_of_memory(const std::exception& e) {
  const std::string what = e.what();
  return what.find("out of memory") != std::string::npos;
}

/// A stop asked for while an evaluation ran: the evaluation is dropped and the run checkpoints where it stood.
struct EvaluationStopped {
  bool final = false;  ///< the run's final evaluation (after its last step, or after max_steps): a resume runs it again
};
/// A stop asked for while an epoch's batches were made: the run checkpoints at that epoch's start.
struct EpochStartStopped {};

}  // namespace

struct Trainer::Impl {
  TrainerSetup setup;
  const TrainConfig& config;
  std::vector<std::function<void(const TrainEvent&)>> listeners;
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> paused{false};

  Dataset dataset;
  TokenizedCorpus train_corpus, test_corpus, label_corpus;
  std::unique_ptr<Method> method;
  std::vector<StageSpec> stages;
  std::unique_ptr<QueryBatcher> batcher;
  std::vector<std::int64_t> training_queries;  ///< rows with labels that train, ascending
  std::vector<std::int64_t> held_out;          ///< rows with labels the method keeps out of training, ascending
  /// Sampled positives and hard negatives of the label pools: a stream of its own, so that how batches
  /// are drawn and how their label pools are drawn never shift each other.
  std::mt19937_64 label_pool_rng;
  /// The next batch, prepared while the current one trains (it draws from label_pool_rng).
  StepPrefetcher prefetcher{label_pool_rng};
  std::unique_ptr<StageOptimizer> optimizer;  ///< the current stage's (null between stages)
  /// A resumed run's optimiser state, kept from the checkpoint's reading until the stage's optimiser is made.
  std::optional<torch::serialize::InputArchive> resumed_optimizer_state;
  TrainingState state;
  CheckpointPolicy checkpoints{{}};  ///< set from the config in prepare() (a worker's is rank 0's)
  torch::Device device = torch::kCPU;
  /// Data-parallel training: the process group (null in a single process) and this process's place in it.
  std::unique_ptr<Communicator> communicator;
  DistributedContext distributed;
  bool stop_agreed = false;   ///< a rank was asked to stop (agreed during the last step's gradient reduction)
  bool pause_agreed = false;  ///< rank 0 was paused (agreed likewise)
  /// Sums the dense gradients during backward (distributed.overlap); made per stage, armed for each step of a
  /// stage whose processes train shards of the batch as batches of their own.
  std::unique_ptr<OverlappedGradientReducer> overlapped_reducer;
  std::unique_ptr<RunEvaluation> evaluations;
  std::unique_ptr<NegativesSnapshots> snapshots;
  EvalResult last_eval;
  std::vector<std::pair<std::string, EvalResult>> last_modes;  ///< every mode of the last evaluation, primary first
  ReportOnlyProgress reporter;  ///< forwards to the caller's progress display for the current run()
  ProcessUsageSampler system_use;  ///< this process's CPU and memory, published every 10 s and at epoch ends
  std::int64_t last_system_use_step = -1;  ///< the step of the last sample published

  /// Set (to why) when the state set aside during an evaluation could not be read back: checkpoints are refused.
  std::string training_state_lost;

  explicit Impl(TrainerSetup s) : setup(std::move(s)), config(setup.config) {
    keep_freed_memory_for_reuse();
    run_blas_on_calling_thread();
  }

  std::filesystem::path checkpoint_path() const { return checkpoint_file(setup.run_dir); }

  void publish(TrainEvent event) {
    event.run_id = setup.run_id;
    if (event.step == 0) event.step = state.step;
    for (const auto& listener : listeners) listener(event);
  }

  void publish_kind(TrainEvent::Kind kind, std::string message = {}) {
    TrainEvent e;
    e.kind = kind;
    e.message = std::move(message);
    publish(e);
  }

  void phase(const std::string& message) { publish_kind(TrainEvent::Kind::Phase, message); }
  /// phase() as a callback, for the components the trainer hands its log to.
  const std::function<void(const std::string&)> log_phase = [this](const std::string& message) { phase(message); };

  /// Publishes a sample of this process's use of the machine when one is due (or `force`), placed at `epoch`.
  void publish_system_use(double epoch, bool force) {
    // A sample at the step of the last one (the finish after the last epoch's end) replaces it in the store, so
    // its CPU rate spans both intervals.
    auto sample = system_use.sample(force, /*replacing=*/state.step == last_system_use_step);
    if (sample.empty()) return;
    last_system_use_step = state.step;
    TrainEvent e;
    e.kind = TrainEvent::Kind::SystemUse;
    e.epoch = epoch;
    e.metrics = std::move(sample);
    publish(e);
  }

  void wait_while_paused() {
    if (!paused.load()) return;
    publish_kind(TrainEvent::Kind::Paused, "paused");
    phase("paused");
    while (paused.load() && !stop_requested.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    publish_kind(TrainEvent::Kind::Resumed, "resumed");
    phase("resumed");
  }

  TrainContext context() {
    return TrainContext{.config = config,
                        .dataset = dataset,
                        .train_corpus = train_corpus,
                        .label_corpus = label_corpus,
                        .device = device,
                        .distributed = distributed,
                        .batcher = *batcher,
                        .label_pool_rng = label_pool_rng,
                        .progress = reporter,
                        .phase = log_phase,
                        .chose = [this](const std::string& key, double value) {
                          TrainEvent e;
                          e.kind = TrainEvent::Kind::SettingChosen;
                          e.message = key;
                          e.value = value;
                          e.epoch = epoch_now();
                          publish(e);
                        }};
  }

  std::size_t stage_index(const std::string& name) const {
    if (name.empty()) return 0;
    if (name == kAllStagesDone) return stages.size();
    for (std::size_t i = 0; i < stages.size(); ++i)
      if (stages[i].name == name) return i;
    if (name == "m1") return 0;  // checkpoints written before stages were the method's: the encoder stage
    throw Error("checkpoint " + checkpoint_path().string() + " is at stage \"" + name + "\", which method " + method->name() +
                " does not have");
  }

  // ---- set-up ---------------------------------------------------------------------------------

  /// Joins the process group (distributed/training_job.h); a rank other than 0 takes rank 0's run from it.
  void join_process_group() {
    communicator = std::make_unique<Communicator>(setup.distributed);
    JoinedJob job = join_training_job(*communicator, {.options = setup.distributed,
                                       .config = config,
                                       .run_id = setup.run_id,
                                       .store_id = setup.store_id,
                                       .resume = setup.resume,
                                       .checkpoint = checkpoint_path(),
                                       .phase = log_phase});
    distributed = {.rank = communicator->rank(), .world_size = communicator->world_size(), .communicator = communicator.get()};
    setup.config = std::move(job.config);
    setup.run_id = job.run_id;
    setup.store_id = job.store_id;
    setup.resume = job.resume;
  }

  /// Every rank starts from rank 0's parameters and buffers.
  void share_parameters() {
    std::vector<torch::Tensor> tensors = method->module().parameters();
    for (const auto& b : method->module().buffers()) tensors.push_back(b);
    xmc::share_parameters(*communicator, std::move(tensors));
  }

  void prepare(Progress& progress) {
    if (setup.distributed.enabled()) join_process_group();
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(config.threads > 0 ? static_cast<int>(config.threads) : std::max(1, cores / setup.distributed.local_world_size));
    set_memory_budget_mb(config.memory_mb);
    phase("memory budget of the temporaries: " + describe_memory_budget());
    if (setup.distributed.rank == 0 && !setup.run_dir.empty()) {
      std::error_code ignored;  // left by a process killed while it evaluated; the checkpoint has what it held
      std::filesystem::remove(set_aside_path(), ignored);
    }
    device = parse_device(config.device);
    if (!setup.resume) torch::manual_seed(config.seed);
    load_data_and_method(progress);
    split_training_queries();
    batcher = std::make_unique<QueryBatcher>(make_batch_order(config), config.batch_size, training_queries, config.seed);
    label_pool_rng.seed(config.seed ^ 0x6c6162656c706f6fULL);  // "labelpoo": any fixed offset from the batcher's seed
    evaluations = std::make_unique<RunEvaluation>(dataset, config, log_phase);
    snapshots = std::make_unique<NegativesSnapshots>(dataset, config.tsne_query, config.tsne_every, config.seed, training_queries, held_out);
    // Only the training queries' tokens are read from here on: their texts (0.8 GB at 2.25M synthetic queries of
    // ~50 words) are not held through training. Freed as millions of small blocks, their pages go back to the
    // system only when asked for (so do the vocabulary's copy of every text and the test queries' texts).
    std::vector<std::string>().swap(dataset.train_text);
    return_freed_memory();

    state.stage = stages.empty() ? kAllStagesDone : stages.front().name;
    if (setup.resume) resume_from_checkpoint();
    checkpoints = CheckpointPolicy({.every_epochs = config.checkpoint_every,
                                    .every_steps = config.checkpoint_every_steps,
                                    .every_minutes = config.checkpoint_every_minutes});
    checkpoints.written_at(state.step);
    if (distributed.enabled()) {
      share_parameters();
      // Dropout differs between ranks (rank 0 keeps the single-process stream; the others are seeded again at
      // every step, worker_step_seed). Batches and shortlists are rank 0's; the label-pool stream starts alike
      // everywhere, so ranks that split a batch draw the same pools (ranks training batch shards of their own
      // then draw for different queries).
      if (!distributed.is_main()) torch::manual_seed(config.seed + 1000003ULL * static_cast<std::uint64_t>(distributed.rank));
    }
    if (!setup.resume && setup.restart) publish_restored(0, 0);  // a run that never reached a checkpoint starts over
  }

  /// The dataset (checked against the one the run started on), the method built on its texts, and the corpora.
  void load_data_and_method(Progress& progress) {
    phase("loading dataset");
    dataset = load_dataset(config.dataset, {.load_features = false, .load_images = reads_image_banks(config)}, progress);
    const auto fingerprint = dataset_fingerprint(config.dataset);
    if (!setup.expected_fingerprint.empty() && setup.expected_fingerprint != fingerprint)
      throw Error("dataset " + config.dataset.string() + " changed since run " + std::to_string(setup.run_id) + " started (fingerprint " +
                  setup.expected_fingerprint + " -> " + fingerprint + "); resuming would mix data");
    phase("tokenizing");
    method = make_method(config);
    if (distributed.enabled() && method->builds_on_another_run())
      throw ConfigError("method " + method->name() + " builds on another run and trains in one process: start it without --nproc/--world-size");
    stages = method->stages();
    if (setup.store != nullptr) method->use_store(*setup.store);
    RunCorpora corpora = build_and_tokenize(*method, dataset, setup.run_dir, at::get_num_threads(), progress, log_phase);
    train_corpus = std::move(corpora.train);
    test_corpus = std::move(corpora.test);
    label_corpus = std::move(corpora.labels);
    phase(method->description());
  }

  /// The labelled training rows, less those the method holds out of training (ascending).
  void split_training_queries() {
    std::vector<std::int64_t> labelled;
    for (std::int64_t r = 0; r < dataset.num_train(); ++r)
      if (dataset.train_labels.row_size(r) > 0) labelled.push_back(r);
    held_out = method->held_out_queries(labelled);
    training_queries.clear();
    std::set_difference(labelled.begin(), labelled.end(), held_out.begin(), held_out.end(), std::back_inserter(training_queries));
  }

  void resume_from_checkpoint() {
    state = load_checkpoint(checkpoint_path(), *method, dataset.num_labels(), setup.store_id, setup.run_id, &resumed_optimizer_state);
    // The checkpoint's archive, read whole, is freed but for the optimiser's part: its pages go back to the system
    // before the optimiser is made.
    return_freed_memory();
    check_resumable(state, stages, dataset.num_train(), method->name(), checkpoint_path());
    if (state.stage.empty()) state.stage = stages.front().name;
    batcher->load_state(state.sampler_state);
    if (!state.label_pool_rng.empty()) {
      std::istringstream rng_state(state.label_pool_rng);
      rng_state >> label_pool_rng;
      if (!rng_state) throw InputError(checkpoint_path().string(), "the label-pool random state does not parse");
    }
    phase("resumed from " + checkpoint_path().string() + " at step " + std::to_string(state.step));
    publish_restored(state.step, epoch_now());
  }

  /// The run goes on from `step` (a resume), or starts over from 0 (what it recorded before is void).
  void publish_restored(std::int64_t step, double epoch) {
    TrainEvent restored;
    restored.kind = TrainEvent::Kind::Restored;
    restored.step = step;
    restored.epoch = epoch;
    publish(restored);
  }

  /// The optimiser of `stage` over the method's parameter groups, scheduled over its `total_steps`, and in a job
  /// the reducer that sums dense gradients during backward.
  void make_optimizer(const StageSpec& stage, std::int64_t total_steps) {
    optimizer = std::make_unique<StageOptimizer>(method->parameter_groups(stage),
                                                 StageOptimizerSetup{.options = config.get<OptimOptions>(),
                                                                     .default_lr = config.lr,
                                                                     .total_steps = total_steps,
                                                                     .clip_gradients = stage.clip_gradients,
                                                                     .may_defer_rows = !distributed.enabled(),
                                                                     .phase = log_phase});
    overlapped_reducer.reset();
    if (distributed.enabled() && config.distributed_overlap == "on") {
      std::vector<torch::Tensor> dense;
      for (const auto& p : optimizer->parameters())
        if (!may_reduce_row_sparse(p) && p.requires_grad()) dense.push_back(p);
      // Small buckets: the first starts while most of backward is still to come; each costs one collective's latency.
      constexpr std::int64_t kOverlapBucketBytes = 4 << 20;
      if (!dense.empty()) overlapped_reducer = std::make_unique<OverlappedGradientReducer>(*communicator, dense, kOverlapBucketBytes);
    }
  }

  std::int64_t batches_per_epoch() const {
    return std::max<std::int64_t>(1, batch_count(static_cast<std::int64_t>(training_queries.size()), config.batch_size));
  }

  // ---- evaluation -----------------------------------------------------------------------------

  /// Every inference mode of the method, ranked over the test set. `final`: the run's last evaluation,
  /// which always gets a t-SNE snapshot when snapshots are on; others get one every tsne.every evaluations.
  /// Applies the optimiser's deferred row updates (FusedAdamW::defer_untouched_rows): before anything reads the
  /// parameters outside a training step.
  void bring_rows_up_to_date() {
    if (optimizer) optimizer->bring_rows_up_to_date();
  }

  EvalResult evaluate(double epoch, bool final = false) {
    bring_rows_up_to_date();
    if (!distributed.is_main()) {  // rank 0 evaluates; the others wait for it
      communicator->hold_for_main("evaluation");
      return {};
    }
    std::unique_ptr<SetAsideTensors> aside = set_aside_idle_state();
    EvalResult result;
    // A stop asked for now ends the evaluation at its next slice of test queries, without recording it (a user
    // would otherwise wait out a 20-minute evaluation for a Ctrl-C). Several processes stop only at a step, together.
    const StoppableWork stoppable(reporter, !distributed.enabled());
    try {
      result = evaluate_on_main(epoch, final);
    } catch (const Cancelled&) {
      bring_back(aside);  // the stop writes a checkpoint, which needs them
      throw EvaluationStopped{.final = final};
    } catch (...) {
      bring_back(aside);  // a failure after which a checkpoint may still be written needs them too
      throw;
    }
    bring_back(aside);
    // The others go on once rank 0 is done (when its evaluation fails, rank 0 ends, and they with it).
    if (distributed.enabled()) communicator->hold_for_main("evaluation");
    return result;
  }

  std::filesystem::path set_aside_path() const { return setup.run_dir / "evaluation-set-aside.bin"; }

  /// The optimiser's moments and the method's shortlists, which an evaluation never reads, written to a file beside
  /// the checkpoint and freed while it runs, when they take at least eval.set_aside_mb: the evaluation's label
  /// matrices then take their place rather than coming on top (UniDEC at 1.3M labels: 2.1 GB of 8.9).
  std::unique_ptr<SetAsideTensors> set_aside_idle_state() {
    std::vector<torch::Tensor> idle = method->idle_during_evaluation();
    if (optimizer)
      for (torch::Tensor& moment : optimizer->adamw().moments()) idle.push_back(std::move(moment));
    // Nothing prepared ahead reads a shortlist while it is away.
    return set_aside_if_large(std::move(idle), config.eval_set_aside_mb, set_aside_path(), [this] { prefetcher.drop(); },
                              log_phase);
  }

  /// Reads the state set_aside_idle_state() wrote back in place. When it cannot, no checkpoint may be written
  /// from this process again (it would save the empty moments over the last good one).
  void bring_back(std::unique_ptr<SetAsideTensors>& aside) {
    if (!aside) return;
    try {
      aside->restore();
    } catch (const std::exception& e) {
      training_state_lost = e.what();
      aside.reset();
      throw;
    }
    aside.reset();
  }

  EvalResult evaluate_on_main(double epoch, bool final) {
    // IRENE's modes score subsets by test row, so it always ranks them all.
    RunEvaluationResult result = evaluations->evaluate(*method, test_corpus, label_corpus, train_corpus, final, method->builds_on_another_run(), epoch,
                                                       reporter, log_phase);
    publish(result.event);
    last_eval = result.primary();
    last_modes = result.named_results();
    if (snapshots->due_after_evaluation(final) && result.training_space)
      snapshots->take(*method, result.evaluation.modes[*result.training_space], train_corpus, state.epoch_batches, epoch, state.step,
                      log_phase, [this](TrainEvent e) { publish(std::move(e)); });
    return last_eval;
  }

  // ---- checkpoints ----------------------------------------------------------------------------

  void checkpoint() {
    if (!training_state_lost.empty())
      throw Error("no checkpoint written: the training state set aside during the evaluation was not read back (" + training_state_lost + ")");
    bring_rows_up_to_date();  // a resumed run starts with every row up to date
    if (!distributed.is_main()) return;  // rank 0 writes the run's checkpoints
    state.sampler_state = batcher->save_state();
    // A batch prepared ahead has drawn from the label-pool stream: the checkpoint keeps the stream as it stood
    // before that batch, which a resumed run prepares again; this run trains the one prepared.
    std::ostringstream rng_state;
    rng_state << prefetcher.stream_before_in_flight();
    state.label_pool_rng = rng_state.str();
    state.store_id = setup.store_id;
    state.run_id = setup.run_id;
    // Announced first: the recorder stores every step up to this one before the file can exist, so a
    // resume from it never misses a recorded step.
    publish_kind(TrainEvent::Kind::Checkpoint, checkpoint_path().string());
    save_checkpoint(checkpoint_path(), *method, optimizer ? &optimizer->adamw() : nullptr, state);
    checkpoints.written_at(state.step);
  }

  // ---- one stage ------------------------------------------------------------------------------

  /// What this process asks of the others at the end of a step: stop, pause (rank 0 only pauses).
  std::pair<bool, bool> control_flags() const { return {stop_requested.load(), distributed.is_main() && paused.load()}; }

  /// The rows this process's train_step() (and prepare_step()) gets of `batch`: the whole batch, or its shard.
  std::span<const std::int64_t> step_rows(const StageSpec& stage, std::span<const std::int64_t> batch) const {
    if (!distributed.enabled() || method->splits_batch_across_ranks(stage)) return batch;
    return own_shard(batch, *communicator);
  }

  /// The method's forward and backward of `batch`. In data-parallel training, either the method splits the
  /// whole batch's work over the ranks (and the ranks' gradients add up to the batch's), or each rank trains
  /// its shard of the batch as a batch of its own (and the gradients and losses are averaged); afterwards
  /// every rank holds the same gradients, loss and query embeddings.
  StepResult step(const StageSpec& stage, const std::vector<std::int64_t>& batch, const PreparedBatch* prepared, TrainContext& ctx) {
    if (!distributed.enabled()) return method->train_step(stage, batch, prepared, ctx);
    const bool split = method->splits_batch_across_ranks(stage);
    // A split batch's backward runs collectives of its own (the gathers' gradients): where a rank's share is
    // empty its graph differs, and buckets started from hooks could interleave with those collectives in
    // another order than on the other ranks. Its dense gradients are reduced after backward.
    OverlappedGradientReducer* overlapped = split ? nullptr : overlapped_reducer.get();
    if (overlapped != nullptr) overlapped->arm();
    StepResult result = method->train_step(stage, step_rows(stage, batch), prepared, ctx);
    // A split batch's loss is already the whole batch's on every rank; shards' losses are averaged.
    const StepAgreement agreed =
        reduce_gradients(*communicator, optimizer->parameters(), /*average=*/!split, control_flags(), overlapped, split ? 0.0 : result.loss);
    stop_agreed = agreed.stop;
    pause_agreed = agreed.pause;
    if (split) return result;
    result.loss = agreed.loss_sum / distributed.world_size;
    return result;
  }

  /// Epochs of the stages before `index`: a stage's fractional epochs continue the run's count.
  double epoch_offset(std::size_t index) const {
    std::int64_t before = 0;
    for (std::size_t i = 0; i < index; ++i) before += stages[i].epochs;
    return static_cast<double>(before);
  }

  /// Where the run is on the whole run's epoch axis: the current stage's offset, its epoch and batch.
  double epoch_now() const {
    return epoch_offset(stage_index(state.stage)) + static_cast<double>(state.epoch) +
           (state.epoch_batches.empty() ? 0.0 : static_cast<double>(state.batch_in_epoch) / static_cast<double>(state.epoch_batches.size()));
  }

  /// The method's batches for `epoch`. A stop asked for while they are made (a clustering, a shortlist refresh:
  /// 10 minutes at 2.25M queries) ends them when the method can make them again: the sampler goes back to where
  /// it stood, and the checkpoint resumes at the epoch's start. Several processes stop only at a step, together.
  std::vector<std::vector<std::int64_t>> epoch_batches_or_stop(const StageSpec& stage, std::int64_t epoch, TrainContext& ctx) {
    const bool can_stop = !distributed.enabled() && method->epoch_batches_can_stop();
    const std::string sampler_before = can_stop ? batcher->save_state() : std::string();
    const StoppableWork stoppable(reporter, can_stop);
    try {
      return method->epoch_batches(stage, epoch, ctx);
    } catch (const Cancelled&) {
      if (!can_stop) throw;
      batcher->load_state(sampler_before);
      throw EpochStartStopped{};
    }
  }

  /// Trains stage `index` from state.epoch/batch_in_epoch to its end; returns false when max_steps stopped it.
  bool train_stage(std::size_t index, Progress& progress) {
    const StageSpec& stage = stages[index];
    TrainContext ctx = context();
    begin_stage(stage, ctx);
    for (; state.epoch < stage.epochs; ++state.epoch) {
      const std::int64_t epoch = state.epoch;
      // Stop before drawing the next epoch's batches, so a resumed run draws exactly the same ones.
      if (config.max_steps > 0 && state.step >= config.max_steps) return false;
      // A checkpoint written after the batches were drawn but before the first step (a stop or a time-placed
      // checkpoint at batch 0) holds them: the resume trains on those, as from any other batch, not on a new draw.
      if (state.batch_in_epoch == 0 && state.epoch_batches.empty()) {
        bring_rows_up_to_date();  // the epoch's clustering and shortlist refresh read the model
        state.epoch_batches = epoch_batches_or_stop(stage, epoch, ctx);
        // The clustering's query embeddings and the refresh's label index and search buffers are freed by now: their
        // pages go back to the system instead of staying in the heap through the epoch (1.2 GB at 2.25M queries).
        return_freed_memory();
        if (distributed.enabled()) share_batches(*communicator, state.epoch_batches);
      }
      if (!train_epoch(stage, index, ctx, progress)) return false;
      end_epoch(stage, index);
    }
    return true;
  }

  /// The stage's start: the method's, rank 0's parameters everywhere, the stage's optimiser (a resumed one's state).
  void begin_stage(const StageSpec& stage, TrainContext& ctx) {
    method->begin_stage(stage, ctx);
    // A stage may add parameters (NGAME's classifiers, UniDEC's table, randomly initialised per rank): every
    // rank starts it from rank 0's.
    if (distributed.enabled()) share_parameters();
    const std::int64_t own = method->batches_per_epoch(stage);
    const std::int64_t per_epoch = own >= 0 ? own : batches_per_epoch();
    make_optimizer(stage, per_epoch * stage.epochs);
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

  /// Trains the current epoch's batches from state.batch_in_epoch; returns false when max_steps stopped it.
  bool train_epoch(const StageSpec& stage, std::size_t index, TrainContext& ctx, Progress& progress) {
    const std::int64_t epoch = state.epoch;
    const std::string epoch_task = stage.epoch_label + " " + std::to_string(epoch + 1) + "/" + std::to_string(stage.epochs);
    phase(epoch_task);
    progress.start(epoch_task, static_cast<std::int64_t>(state.epoch_batches.size()));
    method->module().train();
    const auto epoch_start = Clock::now();
    std::int64_t samples = 0;
    // Whether the method prepares batches (its first prepare_step() says), and whether the next one is prepared
    // while the current one trains (config prefetch): the prefetcher is emptied whenever the loop is left.
    bool prepares_batches = true;
    const bool prefetches = config.prefetch == "on" || (config.prefetch == "auto" && device.is_cuda());
    struct DropPrefetched {
      StepPrefetcher& prefetcher;
      ~DropPrefetched() { prefetcher.drop(); }
    } drop_prefetched{prefetcher};
    const auto batches_count = static_cast<std::int64_t>(state.epoch_batches.size());
    for (; state.batch_in_epoch < batches_count; ++state.batch_in_epoch) {
      hold_or_stop_between_steps();
      // Every run brings its deferred rows up to date at the same steps, whether a checkpoint falls there or not.
      const bool synced_here = optimizer->syncs_rows_at(state.step);
      if (synced_here) bring_rows_up_to_date();
      if (checkpoints.due_within_epoch(state.step, optimizer->syncs_deferred_rows(), synced_here)) checkpoint();  // resumes at this batch
      if (config.max_steps > 0 && state.step >= config.max_steps) return false;
      const auto& batch = state.epoch_batches[static_cast<std::size_t>(state.batch_in_epoch)];
      const auto step_start = Clock::now();
      std::shared_ptr<PreparedBatch> prepared = prefetcher.take(state.batch_in_epoch);
      if (!prepared && prepares_batches) {
        prepared = method->prepare_step(stage, step_rows(stage, batch), ctx);
        prepares_batches = prepared != nullptr;
      }
      if (prefetches && prepares_batches && state.batch_in_epoch + 1 < batches_count) {
        const std::span<const std::int64_t> next = step_rows(stage, state.epoch_batches[static_cast<std::size_t>(state.batch_in_epoch + 1)]);
        prefetcher.start(state.batch_in_epoch + 1, [this, &stage, &ctx, next] { return method->prepare_step(stage, next, ctx); });
      }
      if (distributed.enabled() && !distributed.is_main()) torch::manual_seed(worker_step_seed(config.seed, distributed.rank, state.step));
      const StepResult result = step(stage, batch, prepared.get(), ctx);
      if (!std::isfinite(result.loss))
        throw Error("step " + std::to_string(state.step) + " (" + epoch_task + "): the loss is " + std::to_string(result.loss) + "; lower lr (" +
                    std::to_string(config.lr) + ")" + non_finite_loss_advice(config));
      const double lr = optimizer->step(state.step - state.stage_start_step);
      ++state.step;
      samples += static_cast<std::int64_t>(batch.size());
      publish_step(stage, index, result.loss, lr, static_cast<double>(batch.size()), Clock::now() - step_start);
      progress.update(state.batch_in_epoch + 1);
    }
    progress.finish();
    const double epoch_seconds = std::chrono::duration<double>(Clock::now() - epoch_start).count();
    TrainEvent end;
    end.kind = TrainEvent::Kind::EpochEnd;
    end.epoch = epoch_offset(index) + static_cast<double>(epoch + 1);
    end.stage = stage.name;
    end.samples_per_s = epoch_seconds > 0 ? static_cast<double>(samples) / epoch_seconds : 0;
    publish(end);
    publish_system_use(end.epoch, true);
    return true;
  }

  /// Before a step: waits while paused and throws StopRequested when asked to stop. Several processes pause and
  /// stop together, at the step after the one whose gradient reduction carried the request.
  void hold_or_stop_between_steps() {
    if (!distributed.enabled()) {
      wait_while_paused();
    } else if (pause_agreed) {
      // Rank 0 was paused when the last step ended: it waits, the others wait for it.
      if (distributed.is_main()) wait_while_paused();
      communicator->hold_for_main("pause");
      pause_agreed = false;
    }
    if (distributed.enabled() ? stop_agreed : stop_requested.load()) throw StopRequested{};
  }

  void publish_step(const StageSpec& stage, std::size_t index, double loss, double lr, double batch_rows, Clock::duration took) {
    const double seconds = std::chrono::duration<double>(took).count();
    TrainEvent e;
    e.kind = TrainEvent::Kind::Step;
    e.total_steps = optimizer->schedule().total_steps;
    e.epoch = epoch_offset(index) + static_cast<double>(state.epoch) +
              static_cast<double>(state.batch_in_epoch + 1) / static_cast<double>(state.epoch_batches.size());
    e.stage = stage.name;
    e.loss_series = stage.loss_series;
    e.classifier_stage = stage.loss_series != "loss";
    e.loss = loss;
    e.lr = lr;
    e.samples_per_s = seconds > 0 ? batch_rows / seconds : 0;
    publish(e);
    publish_system_use(e.epoch, false);
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
        evaluate(epoch_offset(index) + static_cast<double>(epoch + 1));
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


  // ---- the whole run --------------------------------------------------------------------------

  TrainResult run(Progress& progress) {
    reporter.target = &progress;
    reporter.stop_requested = &stop_requested;
    try {
      publish_kind(TrainEvent::Kind::Started);
      system_use.sample();  // starts the CPU clock
      prepare(progress);
      for (std::size_t index = stage_index(state.stage); index < stages.size(); index = stage_index(state.stage)) {
        if (!train_stage(index, progress)) {
          // Stopped by max_steps: a resumable checkpoint, then the final evaluation of where it got to.
          checkpoint();
          const double fraction = static_cast<double>(state.batch_in_epoch) / static_cast<double>(std::max<std::size_t>(1, state.epoch_batches.size()));
          EvalResult result = evaluate(epoch_offset(index) + static_cast<double>(state.epoch) + fraction, /*final=*/true);
          return finish(result, RunOutcome::Stopped);
        }
        {
          bring_rows_up_to_date();
          TrainContext ctx = context();
          method->end_stage(stages[index], ctx);
        }
        // The stage is done: the next one starts at its first epoch, with its own schedule.
        state.stage = index + 1 < stages.size() ? stages[index + 1].name : kAllStagesDone;
        state.epoch = 0;
        state.batch_in_epoch = 0;
        state.stage_start_step = state.step;
        // The stage's optimiser is done with (the next stage makes its own): its moments, twice the model, go
        // before the evaluation, and the allocator, which keeps freed blocks for reuse while training, hands their
        // pages back, so that the evaluation's label matrices do not come on top of them.
        optimizer.reset();
        return_freed_memory();
        if (index + 1 < stages.size()) {
          evaluate(epoch_offset(index + 1));
          checkpoint();  // resume point: the next stage starts from here
        }
      }
      EvalResult result = evaluate(epoch_offset(stages.size()), /*final=*/true);
      checkpoint();
      return finish(result, RunOutcome::Completed);
    } catch (const StopRequested&) {
      return stopped_on_request("stopped at step " + std::to_string(state.step) + " (checkpoint written)");
    } catch (const EpochStartStopped&) {
      return stopped_on_request("stopped before epoch " + std::to_string(state.epoch + 1) + "'s training, while its batches or shortlists were made, at step " +
                                std::to_string(state.step) + " (checkpoint written; a resume starts that epoch again)");
    } catch (const EvaluationStopped& stopped) {
      // Training since the last checkpoint is kept; the evaluation is not recorded. A resume goes on training, or
      // after the last step (or max_steps) runs the final evaluation again.
      return stopped_on_request("stopped during the evaluation at step " + std::to_string(state.step) + " (checkpoint written; " +
                                (stopped.final ? "a resume runs the final evaluation" : "a resume goes on training without that evaluation") +
                                ")");
    } catch (const std::exception& e) {
      progress.finish();
      std::string message = e.what();
      if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) message = torch_error->what_without_backtrace();
      if (is_out_of_memory(e))
        message = "out of memory at step " + std::to_string(state.step) + " with batch_size " + std::to_string(config.batch_size) + " on " +
                  config.device + "; lower batch_size, encoder.max_len or all.label_chunk";
      if (setup.describe_peers && message.find("distributed training") != std::string::npos) {
        const std::string peers = setup.describe_peers();
        if (!peers.empty()) message += " [" + peers + "]";
      }
      publish_kind(TrainEvent::Kind::Failed, message);
      // A worker that never heard from rank 0 does not know the run's id.
      throw Error((setup.run_id > 0 ? "run " + std::to_string(setup.run_id) + " failed: " : std::string()) + message);
    }
  }

  TrainResult stopped_on_request(const std::string& message) {
    reporter.finish();
    checkpoint();
    publish_system_use(epoch_now(), true);
    TrainEvent e;
    e.kind = TrainEvent::Kind::Stopped;
    e.message = message;
    publish(e);
    return {RunOutcome::Stopped, last_eval, last_modes};
  }

  TrainResult finish(const EvalResult& result, RunOutcome outcome) {
    publish_system_use(epoch_now(), true);  // the peak, the final evaluation's included
    TrainEvent e;
    e.kind = outcome == RunOutcome::Completed ? TrainEvent::Kind::Finished : TrainEvent::Kind::Stopped;
    e.metrics = result.metrics;
    if (auto it = result.deciles.find("P@5"); it != result.deciles.end()) e.deciles = it->second;
    e.message = outcome == RunOutcome::Completed ? "completed" : "stopped after max_steps = " + std::to_string(config.max_steps) + " (checkpoint written)";
    publish(e);
    return {outcome, result, last_modes};
  }
};

Trainer::Trainer(TrainerSetup setup) : impl_(std::make_unique<Impl>(std::move(setup))) {}
Trainer::~Trainer() = default;
void Trainer::subscribe(std::function<void(const TrainEvent&)> listener) { impl_->listeners.push_back(std::move(listener)); }
void Trainer::request_stop() { impl_->stop_requested.store(true); }
void Trainer::set_paused(bool paused) { impl_->paused.store(paused); }
void Trainer::describe_peers_with(std::function<std::string()> describe) { impl_->setup.describe_peers = std::move(describe); }
TrainResult Trainer::run(Progress& progress) { return impl_->run(progress); }

}  // namespace xmc
