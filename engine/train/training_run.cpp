#include "engine/train/training_run.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/analysis/negatives_snapshot.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/eval/decile_bins.h"
#include "engine/loss/losses.h"
#include "engine/method/xmc_model.h"
#include "engine/sampler/hard_negative_shortlist.h"
#include "engine/sampler/label_pool.h"
#include "engine/sampler/query_batcher.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/train/checkpoint.h"
#include "engine/train/evaluation_pass.h"
#include "engine/train/grad_cache.h"
#include "engine/train/lr_schedule.h"

namespace xmc {
namespace {

using Clock = std::chrono::steady_clock;

/// A stop request unwinds the training loops through this (caught in run()).
struct StopRequested {};

std::string default_run_name(const TrainConfig& c) {
  return c.method + " " + c.encoder_type + " " + c.loss + " on " + std::filesystem::path(c.dataset).filename().string();
}

bool is_out_of_memory(const std::exception& e) {
  const std::string what = e.what();
  return what.find("out of memory") != std::string::npos || what.find("CUDA error: out of memory") != std::string::npos;
}

/// Forwards a run's progress reports but never cancels the work: a run stops through request_stop(),
/// which checkpoints at a step boundary, not in the middle of clustering or an evaluation.
class ReportOnlyProgress final : public Progress {
 public:
  Progress* target = &silent_progress();
  void start(std::string_view task, std::int64_t total) override { target->start(task, total); }
  void update(std::int64_t done) override { target->update(done); }
  void finish() override { target->finish(); }
};

}  // namespace

struct TrainingRun::Impl {
  TrainConfig config;
  std::filesystem::path db_path;
  RunStore store;
  std::int64_t run_id = 0;
  bool resuming = false;
  std::vector<std::function<void(const TrainEvent&)>> listeners;
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> paused{false};

  // Set up by prepare().
  Dataset dataset;
  TokenizedCorpus train_corpus, test_corpus, label_corpus;
  BuiltModel built;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::vector<double> base_lrs;
  std::unique_ptr<QueryBatcher> batcher;
  LossKind loss_kind = LossKind::DecoupledSoftmax;
  LossOptions loss_options;
  TrainingState state;
  torch::Device device = torch::kCPU;
  EvaluationSetup eval_setup;
  EvalResult last_eval;

  // t-SNE snapshots of one query's negatives: its row, the batches of the last finished epoch (not part of
  // checkpoints: state.epoch_batches is cleared at each epoch end) and evaluations made so far.
  std::int64_t snapshot_query = -1;
  std::vector<std::vector<std::int64_t>> snapshot_batches;
  std::int64_t evaluations_done = 0;

  ReportOnlyProgress reporter;  ///< forwards to the caller's progress display for the current run()

  // Scalars waiting to be written to the store.
  std::vector<ScalarPoint> pending;
  Clock::time_point last_flush = Clock::now();

  Impl(TrainConfig c, const std::filesystem::path& db) : config(std::move(c)), db_path(db), store(db) {}

  std::filesystem::path run_dir() const { return TrainingRun::run_directory(db_path, run_id); }
  std::filesystem::path checkpoint_path() const { return run_dir() / "checkpoint.pt"; }

  void publish(TrainEvent event) {
    event.run_id = run_id;
    for (const auto& listener : listeners) listener(event);
  }

  void phase(const std::string& message) {
    TrainEvent e;
    e.kind = TrainEvent::Kind::Phase;
    e.message = message;
    e.step = state.step;
    publish(e);
  }

  void flush_scalars(bool force) {
    if (pending.empty()) return;
    if (!force && Clock::now() - last_flush < std::chrono::seconds(2)) return;
    store.add_scalars(run_id, pending);
    store.heartbeat(run_id);
    pending.clear();
    last_flush = Clock::now();
  }

  void wait_while_paused() {
    if (!paused.load()) return;
    flush_scalars(true);
    store.set_status(run_id, RunStatus::Paused);
    phase("paused");
    while (paused.load() && !stop_requested.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    store.set_status(run_id, RunStatus::Running);
    phase("resumed");
  }

  // ---- set-up ---------------------------------------------------------------------------------

  void prepare(Progress& progress) {
    at::set_num_threads(config.threads > 0 ? static_cast<int>(config.threads)
                                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    device = parse_device(config.device);
    if (!resuming) torch::manual_seed(config.seed);

    phase("loading dataset");
    dataset = load_dataset(config.dataset, {.load_features = false}, progress);
    const auto fingerprint = dataset_fingerprint(config.dataset);
    const RunInfo info = store.get_run(run_id);
    if (!info.dataset_fingerprint.empty() && info.dataset_fingerprint != fingerprint)
      throw Error("dataset " + config.dataset.string() + " changed since run " + std::to_string(run_id) +
                  " started (fingerprint " + info.dataset_fingerprint + " -> " + fingerprint + "); resuming would mix data");

    phase("tokenizing");
    std::vector<std::string> vocabulary_texts = dataset.train_text;
    vocabulary_texts.insert(vocabulary_texts.end(), dataset.label_text.begin(), dataset.label_text.end());
    built = build_model(config, vocabulary_texts, run_dir());
    train_corpus = built.tokenizer->tokenize(dataset.train_text);
    test_corpus = built.tokenizer->tokenize(dataset.test_text);
    label_corpus = built.tokenizer->tokenize(dataset.label_text);
    phase(built.description);

    loss_kind = parse_loss_kind(config.loss);
    loss_options.temperature = config.temperature;
    loss_options.margin = config.margin;
    loss_options.hardest_k = config.hardest_k;
    loss_options.topk_k = config.topk_k;

    std::vector<std::int64_t> trainable;
    for (std::int64_t r = 0; r < dataset.num_train(); ++r)
      if (dataset.train_labels.row_size(r) > 0) trainable.push_back(r);
    batcher = std::make_unique<QueryBatcher>(
        QueryBatcherOptions{.type = config.sampler_type,
                            .batch_size = config.batch_size,
                            .cluster_size = config.cluster_size,
                            .start_epoch = config.sampler_start_epoch,
                            .refresh_every = config.sampler_refresh_every,
                            .grow_at = config.sampler_grow_at},
        std::move(trainable), config.seed);

    eval_setup.truth = &dataset.test_labels;
    eval_setup.filter = &dataset.test_filter;
    eval_setup.inv_propensities = dataset.inverse_propensities();
    eval_setup.bins = decile_bins(dataset.label_frequencies());
    eval_setup.ks = config.eval_k;
    eval_setup.top = config.eval_top;

    if (config.tsne_every > 0) snapshot_query = choose_snapshot_query();

    make_encoder_optimizer();
    if (resuming) {
      const TrainingState saved = read_checkpoint_state(checkpoint_path());
      if (saved.has_classifiers) built.model->add_classifiers(dataset.num_labels());
      state = load_checkpoint(checkpoint_path(), *built.model, saved.phase == "m1" ? optimizer.get() : nullptr);
      batcher->load_state(state.sampler_state);
      phase("resumed from " + checkpoint_path().string() + " at step " + std::to_string(state.step));
    }
  }

  void make_encoder_optimizer() {
    // AdamW with no weight decay on biases and normalisation parameters; heads learn at lr × scale.
    std::vector<torch::Tensor> decay, no_decay, head;
    for (const auto& item : built.model->named_parameters()) {
      const std::string& name = item.key();
      if (name.rfind("classifier_residuals", 0) == 0) continue;
      if (name.rfind("de_head.", 0) == 0) head.push_back(item.value());
      else if (item.value().dim() <= 1 || name.find("norm") != std::string::npos || name.find("LayerNorm") != std::string::npos)
        no_decay.push_back(item.value());
      else decay.push_back(item.value());
    }
    std::vector<torch::optim::OptimizerParamGroup> groups;
    auto group = [&](std::vector<torch::Tensor> params, double lr, double wd) {
      groups.emplace_back(std::move(params), std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(lr).weight_decay(wd)));
      base_lrs.push_back(lr);
    };
    base_lrs.clear();
    group(decay, config.lr, config.weight_decay);
    group(no_decay, config.lr, 0.0);
    group(head, config.lr * config.head_lr_scale, 0.0);
    optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups), torch::optim::AdamWOptions(config.lr));
  }

  std::int64_t batches_per_epoch() const {
    std::int64_t n = 0;
    for (std::int64_t r = 0; r < dataset.num_train(); ++r) n += dataset.train_labels.row_size(r) > 0;
    std::int64_t batches = (n + config.batch_size - 1) / config.batch_size;
    const std::int64_t last = n - (batches - 1) * config.batch_size;
    if (batches > 1 && last < config.batch_size / 4) --batches;
    return std::max<std::int64_t>(1, batches);
  }

  /// tsne.query, checked, or the first training row with >= 3 labels (else the first with the most).
  std::int64_t choose_snapshot_query() const {
    const auto& labels = dataset.train_labels;
    if (config.tsne_query >= 0) {
      if (config.tsne_query >= dataset.num_train())
        throw ConfigError("tsne.query: got " + std::to_string(config.tsne_query) + ", but the training set has " +
                          std::to_string(dataset.num_train()) + " rows; pick a row in [0, " + std::to_string(dataset.num_train()) +
                          ") or -1 for automatic");
      if (labels.row_size(config.tsne_query) == 0)
        throw ConfigError("tsne.query: training row " + std::to_string(config.tsne_query) +
                          " has no labels (so no batch trains it); pick a row with labels or -1 for automatic");
      return config.tsne_query;
    }
    std::int64_t best = -1;
    for (std::int64_t r = 0; r < dataset.num_train(); ++r) {
      if (labels.row_size(r) >= 3) return r;
      if (labels.row_size(r) > 0 && (best < 0 || labels.row_size(r) > labels.row_size(best))) best = r;
    }
    return best;
  }

  /// The t-SNE of the snapshot query's positives and negatives on the current embeddings (`label_embeddings`
  /// = every label's DE embedding, eval mode), stored and published. Uses neither the batcher's nor torch's
  /// random generator, so taking snapshots never changes the training itself.
  void take_snapshot(double epoch, const torch::Tensor& label_embeddings) {
    if (snapshot_query < 0) return;
    try {
      phase("t-SNE of the negatives of training query " + std::to_string(snapshot_query));
      // Mid-epoch (stopped by max_steps) the current epoch's batches, else the last finished epoch's.
      const auto& batches = state.epoch_batches.empty() ? snapshot_batches : state.epoch_batches;
      QueryBatchPool pool = in_batch_negatives(dataset.train_labels, batches, snapshot_query);
      if (pool.batch_queries == 0) {
        // E.g. resumed with no epoch left to train: which negatives its batch gave it is unknown.
        phase("t-SNE snapshot skipped: training query " + std::to_string(snapshot_query) + " is in no batch seen since the run started");
        return;
      }
      NegativesSnapshotInput input;
      input.query = snapshot_query;
      input.query_text = dataset.train_text[static_cast<std::size_t>(snapshot_query)];
      input.epoch = epoch;
      input.step = state.step;
      {
        torch::NoGradGuard no_grad;
        const bool was_training = built.model->is_training();
        built.model->eval();
        const std::vector<std::int64_t> row{snapshot_query};
        input.query_embedding = built.model->embed(train_corpus, row);
        built.model->train(was_training);
      }
      input.label_embeddings = label_embeddings;
      for (std::int32_t l : dataset.train_labels.row_indices(snapshot_query)) input.positives.push_back(l);
      input.in_batch_pool = std::move(pool.labels);
      input.batch_queries = pool.batch_queries;
      input.label_text = &dataset.label_text;
      NegativesSnapshotOptions options;
      options.seed = config.seed + static_cast<std::uint64_t>(state.step);
      options.tsne.seed = config.seed;
      const std::string json = negatives_snapshot_json(input, options);
      store.add_tsne_snapshot(run_id, epoch, snapshot_query, json);
      TrainEvent e;
      e.kind = TrainEvent::Kind::Snapshot;
      e.epoch = epoch;
      e.step = state.step;
      e.message = json;
      publish(e);
    } catch (const std::exception& error) {
      // A diagnostic view must not end a run: say why it is missing and train on.
      std::string message = error.what();
      if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) message = torch_error->what_without_backtrace();
      phase("t-SNE snapshot skipped: " + message);
    }
  }

  // ---- evaluation -----------------------------------------------------------------------------

  void record_evaluation(const EvalResult& result, double epoch, const std::string& prefix = "") {
    std::vector<std::pair<std::string, double>> metrics;
    for (const auto& [name, value] : result.metrics) metrics.emplace_back(prefix + name, value);
    store.add_evaluation(run_id, epoch, state.step, metrics);
    if (prefix.empty()) {
      for (const auto& [name, bars] : result.deciles)
        store.add_decile_table(run_id, epoch, name, std::vector<double>(bars.begin(), bars.end()));
    }
  }

  /// `final`: the run's last evaluation (at the end, or when max_steps stops it), which always gets a
  /// t-SNE snapshot when snapshots are on; others get one every tsne.every evaluations.
  EvalResult evaluate(double epoch, bool final = false) {
    phase("evaluating");
    // Stages the user can watch, each with its own progress: encode test queries, encode labels, rank.
    torch::Tensor queries = built.model->embed_all(test_corpus, reporter, "evaluation: encoding test queries");
    torch::Tensor labels = built.model->embed_all(label_corpus, reporter, "evaluation: encoding labels");
    EvalResult result = evaluate_ranking(queries, labels, eval_setup, reporter, "evaluation: ranking test queries");
    if (built.model->has_classifiers()) {
      // NGAME: embedding scores, classifier scores and their fusion.
      torch::NoGradGuard no_grad;
      const torch::Tensor classifiers = built.model->classifiers(labels);
      record_evaluation(result, epoch, "emb/");
      record_evaluation(evaluate_ranking(queries, classifiers, eval_setup, reporter, "evaluation: ranking by classifiers"), epoch, "clf/");
      result = evaluate_ranking(queries, XmcModelImpl::fuse(classifiers, labels, config.ngame_fusion), eval_setup, reporter,
                                "evaluation: ranking by fused scores");
    }
    record_evaluation(result, epoch);
    TrainEvent e;
    e.kind = TrainEvent::Kind::Evaluation;
    e.epoch = epoch;
    e.step = state.step;
    e.metrics = result.metrics;
    if (auto it = result.deciles.find("P@5"); it != result.deciles.end()) e.deciles = it->second;
    publish(e);
    last_eval = result;
    ++evaluations_done;
    if (config.tsne_every > 0 && (final || evaluations_done % config.tsne_every == 0)) take_snapshot(epoch, labels);
    return result;
  }

  // ---- checkpoints ----------------------------------------------------------------------------

  void checkpoint(torch::optim::Optimizer* opt) {
    state.sampler_state = batcher->save_state();
    state.has_classifiers = built.model->has_classifiers();
    const bool first = !std::filesystem::exists(checkpoint_path());
    save_checkpoint(checkpoint_path(), *built.model, opt, state);
    if (first) store.add_artifact(run_id, "checkpoint", checkpoint_path().string());
    TrainEvent e;
    e.kind = TrainEvent::Kind::Checkpoint;
    e.message = checkpoint_path().string();
    e.step = state.step;
    publish(e);
  }

  /// Queues the scalars of the optimiser step just taken (state.step) and publishes its Step event. The
  /// loss is "loss" in M1/DEXML and "m4_loss" in NGAME's stage M4; learning rate and throughput are one
  /// series through both stages.
  void record_step(bool classifier_stage, double fractional_epoch, double loss, double lr, Clock::time_point step_start,
                   std::int64_t batch_rows, std::int64_t total_steps) {
    const double seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    const double rate = seconds > 0 ? static_cast<double>(batch_rows) / seconds : 0;
    const double now = RunStore::now_seconds();
    pending.push_back({state.step, fractional_epoch, classifier_stage ? "m4_loss" : "loss", loss, now});
    pending.push_back({state.step, fractional_epoch, "lr", lr, now});
    pending.push_back({state.step, fractional_epoch, "samples_per_s", rate, now});
    TrainEvent e;
    e.kind = TrainEvent::Kind::Step;
    e.step = state.step;
    e.total_steps = total_steps;
    e.epoch = fractional_epoch;
    e.classifier_stage = classifier_stage;
    e.loss = loss;
    e.lr = lr;
    e.samples_per_s = rate;
    publish(e);
  }

  // ---- stage M1 / DEXML: the encoder -----------------------------------------------------------

  torch::Tensor batch_loss(const torch::Tensor& scores, const torch::Tensor& mask) {
    return compute_loss(loss_kind, scores, mask, loss_options);
  }

  void train_encoder(Progress& progress) {
    const std::int64_t per_epoch = batches_per_epoch();
    const LrSchedule schedule{.total_steps = per_epoch * config.epochs,
                              .warmup_steps = static_cast<std::int64_t>(config.warmup * static_cast<double>(per_epoch * config.epochs)),
                              .kind = config.schedule};
    std::vector<torch::Tensor> parameters;
    for (auto& group : optimizer->param_groups())
      for (auto& p : group.params()) parameters.push_back(p);
    const auto& labels = dataset.train_labels;

    for (; state.epoch < config.epochs; ++state.epoch) {
      const std::int64_t epoch = state.epoch;
      // Stop before drawing the next epoch's batches, so a resumed run draws exactly the same ones.
      if (config.max_steps > 0 && state.step >= config.max_steps) return;
      if (state.batch_in_epoch == 0) {
        if (batcher->needs_embeddings(epoch)) {
          if (!state.last_embeddings.defined() || epoch == 0) {
            phase("encoding training queries");
            state.last_embeddings = built.model->embed_all(train_corpus, reporter, "encoding training queries for clustering");
          }
          phase("clustering queries (C = " + std::to_string(batcher->cluster_size_at(epoch)) + ")");
        }
        state.epoch_batches = batcher->epoch_batches(epoch, state.last_embeddings, &reporter);
        if (config.negatives == "hard" && (!state.shortlist.defined() || epoch - state.shortlist_epoch >= config.shortlist_refresh_every)) {
          phase("refreshing hard-negative shortlists");
          state.shortlist = hard_negative_shortlist(built.model->embed_all(train_corpus, reporter, "hard-negative index: encoding training queries"),
                                                    built.model->embed_all(label_corpus, reporter, "hard-negative index: encoding labels"),
                                                    labels, config.shortlist_size, reporter);
          state.shortlist_epoch = epoch;
        }
      }
      if (!state.last_embeddings.defined())
        state.last_embeddings = torch::zeros({dataset.num_train(), config.encoder_dim}, torch::TensorOptions().device(device));

      // NGAME names its two stages (M1 encoder, M4 classifiers) so the epoch counts are not confused.
      const std::string epoch_task = std::string(config.method == "ngame" ? "M1 epoch " : "epoch ") + std::to_string(epoch + 1) + "/" +
                                     std::to_string(config.epochs);
      phase(epoch_task);
      progress.start(epoch_task,
                     static_cast<std::int64_t>(state.epoch_batches.size()));
      built.model->train();
      auto epoch_start = Clock::now();
      std::int64_t samples = 0;
      const LabelPoolOptions pool_options{.hard_per_query = config.negatives == "hard" ? config.hard_per_query : 0,
                                          .all_labels = config.negatives == "all"};
      for (; state.batch_in_epoch < static_cast<std::int64_t>(state.epoch_batches.size()); ++state.batch_in_epoch) {
        wait_while_paused();
        if (stop_requested.load()) throw StopRequested{};
        if (config.max_steps > 0 && state.step >= config.max_steps) return;
        const auto& batch = state.epoch_batches[static_cast<std::size_t>(state.batch_in_epoch)];
        const auto step_start = Clock::now();
        LabelPool pool = build_label_pool(labels, batch, batcher->rng(), pool_options, state.shortlist);
        double loss_value = 0;
        torch::Tensor query_embeddings;
        if (config.negatives == "all") {
          auto [value, q] = grad_cached_backward(built.model, train_corpus, batch, label_corpus, pool.positive_mask,
                                                 [&](const torch::Tensor& s, const torch::Tensor& m) { return batch_loss(s, m); },
                                                 config.label_chunk);
          loss_value = value;
          query_embeddings = q;
        } else {
          torch::Tensor q = built.model->embed(train_corpus, batch);
          torch::Tensor l = built.model->embed(label_corpus, pool.labels);
          torch::Tensor loss = batch_loss(torch::matmul(q, l.t()), pool.positive_mask.to(device));
          loss_value = loss.item<double>();
          if (std::isfinite(loss_value)) loss.backward();
          query_embeddings = q.detach();
        }
        if (!std::isfinite(loss_value)) {
          throw Error("step " + std::to_string(state.step) + " (epoch " + std::to_string(epoch + 1) + "): the loss is " +
                      std::to_string(loss_value) + "; lower lr (" + std::to_string(config.lr) + ") or raise temperature (" +
                      std::to_string(config.temperature) + ")");
        }
        if (config.grad_clip > 0) torch::nn::utils::clip_grad_norm_(parameters, config.grad_clip);
        const double factor = schedule.factor(state.step);
        for (std::size_t g = 0; g < optimizer->param_groups().size(); ++g)
          static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[g].options()).lr(base_lrs[g] * factor);
        optimizer->step();
        optimizer->zero_grad();
        {
          torch::NoGradGuard no_grad;
          state.last_embeddings.index_copy_(0, torch::tensor(batch, torch::kInt64).to(device), query_embeddings.to(state.last_embeddings.dtype()));
        }
        ++state.step;
        samples += static_cast<std::int64_t>(batch.size());
        record_step(/*classifier_stage=*/false,
                    static_cast<double>(epoch) + static_cast<double>(state.batch_in_epoch + 1) / static_cast<double>(state.epoch_batches.size()),
                    loss_value, base_lrs[0] * factor, step_start, static_cast<std::int64_t>(batch.size()), schedule.total_steps);
        progress.update(state.batch_in_epoch + 1);
        flush_scalars(false);
      }
      progress.finish();
      flush_scalars(true);
      const double epoch_seconds = std::chrono::duration<double>(Clock::now() - epoch_start).count();
      store.add_scalars(run_id, {{state.step, static_cast<double>(epoch + 1), "epoch_queries_per_s",
                                  epoch_seconds > 0 ? static_cast<double>(samples) / epoch_seconds : 0, RunStore::now_seconds()}});
      state.batch_in_epoch = 0;
      snapshot_batches = std::move(state.epoch_batches);
      state.epoch_batches.clear();
      const bool last = epoch + 1 == config.epochs;
      if (!last && config.eval_every > 0 && (epoch + 1) % config.eval_every == 0) evaluate(static_cast<double>(epoch + 1));
      if (!last && config.checkpoint_every > 0 && (epoch + 1) % config.checkpoint_every == 0) {
        ++state.epoch;  // the checkpoint resumes at the next epoch
        checkpoint(optimizer.get());
        --state.epoch;
      }
    }
  }

  // ---- NGAME stage M4: classifiers on the frozen encoder ----------------------------------------

  void train_classifiers(Progress& progress) {
    phase("NGAME M4: encoding with the frozen encoder");
    torch::Tensor queries = built.model->embed_all(train_corpus, reporter, "NGAME M4: encoding training queries");
    torch::Tensor label_embeddings = built.model->embed_all(label_corpus, reporter, "NGAME M4: encoding labels");
    if (!built.model->has_classifiers()) built.model->add_classifiers(dataset.num_labels());
    torch::Tensor& residuals = built.model->classifier_residuals();
    torch::optim::AdamW m4_optimizer({residuals}, torch::optim::AdamWOptions(config.lr * config.head_lr_scale).weight_decay(0));
    const std::int64_t per_epoch = batches_per_epoch();
    const LrSchedule schedule{.total_steps = per_epoch * config.ngame_m4_epochs,
                              .warmup_steps = static_cast<std::int64_t>(config.warmup * static_cast<double>(per_epoch * config.ngame_m4_epochs)),
                              .kind = config.schedule};
    std::int64_t m4_step = 0;
    const auto& labels = dataset.train_labels;
    const std::int64_t cluster_epoch = config.epochs;  // M4 batches use the curriculum's last cluster size
    for (std::int64_t epoch = 0; epoch < config.ngame_m4_epochs; ++epoch) {
      // Clustered batches of the (fixed) query embeddings; label pool = all positives of the batch.
      const auto batches = batcher->epoch_batches(cluster_epoch, queries, &reporter);
      phase("NGAME M4 epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config.ngame_m4_epochs));
      progress.start("M4 epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config.ngame_m4_epochs), static_cast<std::int64_t>(batches.size()));
      for (std::size_t b = 0; b < batches.size(); ++b) {
        wait_while_paused();
        if (stop_requested.load()) throw StopRequested{};
        const auto& batch = batches[b];
        const auto step_start = Clock::now();
        LabelPool pool = build_label_pool(labels, batch, batcher->rng(), {.all_positives = true});
        torch::Tensor pool_ids = torch::tensor(pool.labels, torch::kInt64).to(device);
        torch::Tensor batch_ids = torch::tensor(batch, torch::kInt64).to(device);
        torch::Tensor w = built.model->classifiers(label_embeddings.index_select(0, pool_ids), pool_ids);
        torch::Tensor loss = batch_loss(torch::matmul(queries.index_select(0, batch_ids), w.t()), pool.positive_mask.to(device));
        const double value = loss.item<double>();
        if (!std::isfinite(value)) throw Error("NGAME M4 step " + std::to_string(m4_step) + ": the loss is " + std::to_string(value));
        loss.backward();
        const double lr = config.lr * config.head_lr_scale * schedule.factor(m4_step);
        static_cast<torch::optim::AdamWOptions&>(m4_optimizer.param_groups()[0].options()).lr(lr);
        m4_optimizer.step();
        m4_optimizer.zero_grad();
        ++m4_step;
        ++state.step;
        record_step(/*classifier_stage=*/true,
                    static_cast<double>(config.epochs + epoch) + static_cast<double>(b + 1) / static_cast<double>(batches.size()),
                    value, lr, step_start, static_cast<std::int64_t>(batch.size()), schedule.total_steps);
        progress.update(static_cast<std::int64_t>(b + 1));
        flush_scalars(false);
      }
      progress.finish();
      flush_scalars(true);
      snapshot_batches = batches;
    }
  }

  // ---- the whole run --------------------------------------------------------------------------

  TrainResult run(Progress& progress) {
    reporter.target = &progress;
    try {
      store.set_status(run_id, RunStatus::Running);
      prepare(progress);
      if (state.phase == "m1") {
        train_encoder(progress);
        const bool stopped_by_max_steps = config.max_steps > 0 && state.step >= config.max_steps && state.epoch < config.epochs;
        if (stopped_by_max_steps) {
          checkpoint(optimizer.get());
          EvalResult result = evaluate(static_cast<double>(state.epoch) +
                                       static_cast<double>(state.batch_in_epoch) / static_cast<double>(std::max<std::size_t>(1, state.epoch_batches.size())),
                                       /*final=*/true);
          return finish(result, RunOutcome::Stopped);
        }
        state.phase = config.method == "ngame" && config.ngame_m4_epochs > 0 ? "m4" : "done";
        if (state.phase == "m4") {
          evaluate(static_cast<double>(config.epochs));
          checkpoint(nullptr);  // resume point: M4 restarts from the trained encoder
        }
      }
      if (state.phase == "m4") {
        train_classifiers(progress);
        state.phase = "done";
      }
      EvalResult result = evaluate(static_cast<double>(total_epochs(config)), /*final=*/true);
      checkpoint(nullptr);
      return finish(result, RunOutcome::Completed);
    } catch (const StopRequested&) {
      progress.finish();
      flush_scalars(true);
      if (state.phase == "m1") checkpoint(optimizer.get());
      store.set_status(run_id, RunStatus::Stopped);
      TrainEvent e;
      e.kind = TrainEvent::Kind::Stopped;
      e.step = state.step;
      e.message = "stopped at step " + std::to_string(state.step) + " (checkpoint written)";
      publish(e);
      return {RunOutcome::Stopped, last_eval};
    } catch (const std::exception& e) {
      progress.finish();
      std::string message = e.what();
      if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) message = torch_error->what_without_backtrace();
      if (is_out_of_memory(e))
        message = "out of memory at step " + std::to_string(state.step) + " with batch_size " + std::to_string(config.batch_size) +
                  " on " + config.device + "; lower batch_size, encoder.max_len or all.label_chunk";
      try {
        flush_scalars(true);
      } catch (...) {
      }
      store.mark_failed(run_id, message);
      TrainEvent event;
      event.kind = TrainEvent::Kind::Failed;
      event.step = state.step;
      event.message = message;
      publish(event);
      throw Error("run " + std::to_string(run_id) + " failed: " + message);
    }
  }

  TrainResult finish(const EvalResult& result, RunOutcome outcome) {
    flush_scalars(true);
    store.set_status(run_id, outcome == RunOutcome::Completed ? RunStatus::Completed : RunStatus::Stopped);
    TrainEvent e;
    e.kind = outcome == RunOutcome::Completed ? TrainEvent::Kind::Finished : TrainEvent::Kind::Stopped;
    e.step = state.step;
    e.metrics = result.metrics;
    if (auto it = result.deciles.find("P@5"); it != result.deciles.end()) e.deciles = it->second;
    e.message = outcome == RunOutcome::Completed ? "completed" : "stopped after max_steps = " + std::to_string(config.max_steps) + " (checkpoint written)";
    publish(e);
    return {outcome, result};
  }
};

TrainingRun::TrainingRun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TrainingRun::TrainingRun(TrainConfig config, const std::filesystem::path& db_path) {
  validate(config);
  if (config.name.empty()) config.name = default_run_name(config);
  impl_ = std::make_unique<Impl>(std::move(config), db_path);
  NewRun run;
  run.name = impl_->config.name;
  run.config_json = to_json(impl_->config);
  run.dataset_path = std::filesystem::absolute(impl_->config.dataset).string();
  run.dataset_fingerprint = dataset_fingerprint(impl_->config.dataset);
  run.device = impl_->config.device;
  impl_->run_id = impl_->store.create_run(run);
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
  auto impl = std::make_unique<Impl>(std::move(config), db_path);
  impl->run_id = run_id;
  impl->resuming = true;
  const auto checkpoint = run_directory(db_path, run_id) / "checkpoint.pt";
  if (!std::filesystem::exists(checkpoint))
    throw ConfigError("run " + std::to_string(run_id) + " has no checkpoint to resume from (" + checkpoint.string() + ")");
  return TrainingRun(std::move(impl));
}

TrainingRun::~TrainingRun() = default;
TrainingRun::TrainingRun(TrainingRun&&) noexcept = default;
TrainingRun& TrainingRun::operator=(TrainingRun&&) noexcept = default;

std::int64_t TrainingRun::run_id() const { return impl_->run_id; }
const TrainConfig& TrainingRun::config() const { return impl_->config; }
void TrainingRun::subscribe(std::function<void(const TrainEvent&)> listener) { impl_->listeners.push_back(std::move(listener)); }
void TrainingRun::request_stop() { impl_->stop_requested.store(true); }
void TrainingRun::set_paused(bool paused) { impl_->paused.store(paused); }
TrainResult TrainingRun::run(Progress& progress) { return impl_->run(progress); }

std::filesystem::path TrainingRun::run_directory(const std::filesystem::path& db_path, std::int64_t run_id) {
  return xmc::run_directory(db_path, run_id);
}

}  // namespace xmc
