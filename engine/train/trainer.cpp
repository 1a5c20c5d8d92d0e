#include "engine/train/trainer.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "engine/analysis/negatives_snapshot.h"
#include "engine/core/allocator_tuning.h"
#include "engine/model/cpu_thread_policy.h"
#include "engine/index/rag_options.h"
#include "engine/core/atomic_file.h"
#include "engine/core/blas_threads.h"
#include "engine/core/memory_budget.h"
#include "engine/core/error.h"
#include "engine/core/process_usage.h"
#include "engine/core/splitmix64.h"
#include "engine/data/dataset.h"
#include "engine/distributed/communicator.h"
#include "engine/eval/metric_key.h"
#include "engine/method/method_registry.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/image_options.h"
#include "engine/text/corpus_rows.h"
#include "engine/sampler/query_batcher.h"
#include "engine/store/run_files.h"
#include "engine/method/checkpoint.h"
#include "engine/optim/fused_adamw.h"
#include "engine/distributed/gradient_exchange.h"
#include "engine/optim/gradient_clipping.h"
#include "engine/optim/sparse_gradient.h"
#include "engine/train/set_aside_tensors.h"
#include "engine/train/step_prefetcher.h"
#include "engine/optim/lr_schedule.h"
#include "engine/distributed/overlapped_gradient_reducer.h"
#include "engine/train/mode_evaluation.h"
#include "engine/train/shared_candidate_evaluation.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

using Clock = std::chrono::steady_clock;

/// `value` with two decimals ("0.95"), for log lines.
std::string two_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

/// A stop request unwinds the training loop through this (caught in run()).
struct StopRequested {};

/// The seed a rank other than 0 gives its generator before each step (splitmix64's mix of seed, rank and
/// step). Only rank 0's generator state is in the checkpoint, so the other ranks' draws (dropout) restart at
/// every step from what the step is: a resumed run draws what an uninterrupted one does.
std::uint64_t worker_step_seed(std::uint64_t seed, int rank, std::int64_t step) {
  return splitmix64_mix(seed + kSplitmix64Increment * (static_cast<std::uint64_t>(rank) + 1) +
                        0xD1B54A32D192ED03ULL * static_cast<std::uint64_t>(step));
}

constexpr const char* kDone = "done";

std::string read_file_bytes(const std::filesystem::path& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw InputError(path.string(), "cannot be read");
  return bytes;
}

void write_file_bytes(const std::filesystem::path& path, const std::string& bytes) {
  AtomicFileWriter writer(path, std::ios::out | std::ios::binary);
  writer.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  writer.commit();
}

/// Rank 0's batches on every rank (replicated clustering may round differently between processes).
void share_batches(Communicator& communicator, std::vector<std::vector<std::int64_t>>& batches) {
  torch::Tensor count = torch::tensor({static_cast<std::int64_t>(batches.size())}, torch::kInt64);
  communicator.broadcast(count, "sharing the epoch's batches");
  batches.resize(static_cast<std::size_t>(count.item<std::int64_t>()));
  torch::Tensor sizes = torch::empty({count.item<std::int64_t>()}, torch::kInt64);
  for (std::size_t b = 0; b < batches.size(); ++b) sizes[static_cast<std::int64_t>(b)] = static_cast<std::int64_t>(batches[b].size());
  communicator.broadcast(sizes, "sharing the epoch's batches");
  torch::Tensor rows = torch::empty({sizes.sum().item<std::int64_t>()}, torch::kInt64);
  if (communicator.rank() == 0) {
    std::int64_t at = 0;
    auto* out = rows.data_ptr<std::int64_t>();
    for (const auto& batch : batches)
      for (const std::int64_t r : batch) out[at++] = r;
  }
  communicator.broadcast(rows, "sharing the epoch's batches");
  const auto* in = rows.data_ptr<std::int64_t>();
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto size = static_cast<std::size_t>(sizes[static_cast<std::int64_t>(b)].item<std::int64_t>());
    batches[b].assign(in, in + size);
    in += size;
  }
}

bool is_out_of_memory(const std::exception& e) {
  const std::string what = e.what();
  return what.find("out of memory") != std::string::npos;
}

/// Forwards a run's progress reports. A run stops through request_stop(), which checkpoints at a step boundary;
/// only work that can be dropped and done again is cut short by it (`stoppable`, set while such work runs): an
/// evaluation, which changes no training state, and an epoch's start (clustering, shortlist refresh) for a method
/// that says it can start the epoch again.
class ReportOnlyProgress final : public Progress {
 public:
  Progress* target = &silent_progress();
  const std::atomic<bool>* stop_requested = nullptr;
  bool stoppable = false;
  void start(std::string_view task, std::int64_t total) override { target->start(task, total); }
  void update(std::int64_t done) override { target->update(done); }
  void finish() override { target->finish(); }
  bool cancelled() const override { return stoppable && stop_requested != nullptr && stop_requested->load(); }
};

/// Marks the reporter stoppable (`on`) for its own lifetime.
class StoppableWork {
 public:
  StoppableWork(ReportOnlyProgress& reporter, bool on) : reporter_(reporter) { reporter_.stoppable = on; }
  ~StoppableWork() { reporter_.stoppable = false; }
  StoppableWork(const StoppableWork&) = delete;
  StoppableWork& operator=(const StoppableWork&) = delete;

 private:
  ReportOnlyProgress& reporter_;
};

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
  std::unique_ptr<FusedAdamW> optimizer;
  /// A resumed run's optimiser state, kept from the checkpoint's reading until the stage's optimiser is made.
  std::optional<torch::serialize::InputArchive> resumed_optimizer_state;
  std::vector<double> base_lrs;
  std::vector<torch::Tensor> clipped_parameters;
  TrainingState state;
  std::int64_t last_checkpoint_step = 0;      ///< state.step of the last checkpoint (or of the start)
  Clock::time_point last_checkpoint_time{};   ///< when it was written
  torch::Device device = torch::kCPU;
  /// Data-parallel training: the process group (null in a single process) and this process's place in it.
  std::unique_ptr<Communicator> communicator;
  DistributedContext distributed;
  bool stop_agreed = false;   ///< a rank was asked to stop (agreed during the last step's gradient reduction)
  bool pause_agreed = false;  ///< rank 0 was paused (agreed likewise)
  /// Sums the dense gradients during backward (distributed.overlap); made per stage, armed for each step of a
  /// stage whose processes train shards of the batch as batches of their own.
  std::unique_ptr<OverlappedGradientReducer> overlapped_reducer;
  EvaluationSetup eval_setup;
  /// Every stride-th test query, its truth and filter rows: what evaluations before the last rank with
  /// eval.max_queries (made once; its setup points into it).
  struct TestSample {
    TokenizedCorpus corpus;
    CsrMatrix truth;
    FilterPairs filter;
    EvaluationSetup setup;
    TestSample(const TokenizedCorpus& queries, const EvaluationSetup& full, std::int64_t most) : setup(full) {
      const std::int64_t stride = (queries.size() + most - 1) / most;
      truth.cols = full.truth->cols;
      std::vector<FilterPair> pairs;
      std::vector<std::int64_t> rows;
      for (std::int64_t row = 0; row < queries.size(); row += stride) {
        rows.push_back(row);
        truth.append_row(full.truth->row_indices(row), full.truth->row_values(row));
      }
      corpus = corpus_rows(queries, rows);
      for (const FilterPair& p : full.filter->pairs())
        if (p.row % stride == 0) pairs.push_back({p.row / stride, p.label});
      filter = FilterPairs(std::move(pairs));
      setup.truth = &truth;
      setup.filter = &filter;
    }
  };
  std::unique_ptr<TestSample> test_sample;
  EvalResult last_eval;
  std::vector<std::pair<std::string, EvalResult>> last_modes;  ///< every mode of the last evaluation, primary first
  ReportOnlyProgress reporter;  ///< forwards to the caller's progress display for the current run()
  ProcessUsageSampler system_use;  ///< this process's CPU and memory, published every 10 s and at epoch ends
  std::int64_t last_system_use_step = -1;  ///< the step of the last sample published

  // t-SNE snapshots of one query's negatives: its row, the batches of the last finished epoch (not part of
  // checkpoints: state.epoch_batches is cleared at each epoch end) and evaluations made so far.
  std::int64_t snapshot_query = -1;
  std::string snapshot_query_text;
  std::vector<std::vector<std::int64_t>> snapshot_batches;
  std::int64_t evaluations_done = 0;
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
                        .phase = [this](const std::string& m) { phase(m); },
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
    if (name == kDone) return stages.size();
    for (std::size_t i = 0; i < stages.size(); ++i)
      if (stages[i].name == name) return i;
    if (name == "m1") return 0;  // checkpoints written before stages were the method's: the encoder stage
    throw Error("checkpoint " + checkpoint_path().string() + " is at stage \"" + name + "\", which method " + method->name() +
                " does not have");
  }

  // ---- set-up ---------------------------------------------------------------------------------

  /// This process's device in a job: "cuda" becomes one GPU per local process. Sets `shares_gpu` when other
  /// processes of this machine train on the same device.
  std::string rank_device(const std::string& configured, bool& shares_gpu) const {
    const int local = setup.distributed.local_world_size;
    shares_gpu = false;
    if (configured.rfind("cuda", 0) != 0 || !torch::cuda::is_available()) return configured;
    const auto gpus = static_cast<int>(torch::cuda::device_count());
    shares_gpu = local > 1 && (configured != "cuda" || local > gpus);
    if (configured != "cuda" || local == 1) return configured;
    return "cuda:" + std::to_string(setup.distributed.rank % local % gpus);
  }

  /// Sets this rank's device in the config and returns the backend it joins with: `requested` (auto, gloo,
  /// nccl) checked against that device and this build. Throws ConfigError naming what it cannot use.
  std::string settle_device_and_backend(const std::string& requested) {
    bool shares_gpu = false;
    const std::string own_device = rank_device(config.device, shares_gpu);
    parse_device(own_device);
    const std::string backend = choose_collective_backend(requested, own_device, shares_gpu, Communicator::has_gloo(), Communicator::has_nccl());
    setup.config.device = own_device;
    return backend;
  }

  /// Why this rank cannot take part in the job rank 0 described ("" when it can): its device, the backend,
  /// the dataset.
  std::string readiness(const nlohmann::json& handshake) {
    try {
      settle_device_and_backend(handshake.at("backend").get<std::string>());
      const auto fingerprint = dataset_fingerprint(config.dataset);
      if (fingerprint != handshake.at("fingerprint").get<std::string>())
        return "the dataset at " + config.dataset.string() + " is not rank 0's (fingerprint " + fingerprint + ", rank 0 has " +
               handshake.at("fingerprint").get<std::string>() + "); every rank must see the same data";
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  }

  /// Joins the process group; rank 0 sends the others what they need to train the same run (its config, the
  /// backend it chose for its device, the run's identity, the dataset's fingerprint and, when resuming, its
  /// checkpoint). Before anyone waits in a group, every rank says through the rendezvous store whether it can
  /// take part, and rank 0 stops the job naming the first that cannot: ranks that chose differently, or a
  /// rank that cannot join at all, would otherwise leave the others waiting out the timeout.
  void join_process_group() {
    communicator = std::make_unique<Communicator>(setup.distributed);
    const bool main = setup.distributed.rank == 0;
    phase("joining the " + std::to_string(setup.distributed.world_size) + "-process group as rank " + std::to_string(setup.distributed.rank));
    nlohmann::json handshake;
    std::string own_problem;
    if (main) {
      try {
        const std::string shared_config = to_json(config);  // "cuda" as configured: each rank picks its own GPU
        const std::string backend = settle_device_and_backend(config.distributed_backend);
        handshake = {{"config", shared_config},
                     {"backend", backend},
                     {"run_id", setup.run_id},
                     {"store_id", setup.store_id},
                     {"fingerprint", dataset_fingerprint(config.dataset)},
                     {"resume", setup.resume}};
      } catch (const std::exception& e) {
        own_problem = e.what();
        handshake = {{"problem", own_problem}};
      }
    }
    handshake = nlohmann::json::parse(communicator->share_from_main(handshake.dump(), "the run's config"));
    if (!main) {
      if (handshake.contains("problem"))
        throw Error("rank 0 stopped the job before it started: " + handshake.at("problem").get<std::string>());
      setup.config = parse_train_config(handshake.at("config").get<std::string>(), "rank 0's config");
      own_problem = readiness(handshake);
    } else if (!own_problem.empty()) {
      throw ConfigError(own_problem);
    }
    const std::vector<std::string> problems = communicator->gather_at_main(own_problem, "whether every rank can take part");
    if (!own_problem.empty()) throw ConfigError(own_problem);  // reported: rank 0 names it and stops the others
    std::string verdict;
    for (std::size_t r = 1; r < problems.size() && verdict.empty(); ++r)
      if (!problems[r].empty()) verdict = "rank " + std::to_string(r) + " cannot take part: " + problems[r];
    verdict = communicator->share_from_main(verdict, "rank 0's go-ahead");
    if (!verdict.empty()) throw Error(verdict);
    const std::string backend = handshake.at("backend").get<std::string>();
    communicator->join(parse_device(config.device), backend);
    phase("joined the " + backend + " group");
    distributed = {.rank = communicator->rank(), .world_size = communicator->world_size(), .communicator = communicator.get()};
    std::string checkpoint_bytes;
    if (main && setup.resume) checkpoint_bytes = read_file_bytes(checkpoint_path());
    if (handshake.at("resume").get<bool>()) checkpoint_bytes = communicator->broadcast_bytes(checkpoint_bytes, "sending the checkpoint");
    if (main) return;
    setup.run_id = handshake.at("run_id").get<std::int64_t>();
    setup.store_id = handshake.at("store_id").get<std::string>();
    setup.resume = handshake.at("resume").get<bool>();
    if (setup.resume) write_file_bytes(checkpoint_path(), checkpoint_bytes);
  }

  /// Every rank starts from rank 0's parameters (after a resume too); a rank whose model came out with other
  /// shapes (another vocabulary) is refused before any step.
  void share_parameters() {
    std::vector<torch::Tensor> tensors;
    for (const auto& p : method->module().parameters()) tensors.push_back(p);
    for (const auto& b : method->module().buffers()) tensors.push_back(b);
    std::int64_t elements = 0;
    for (const auto& t : tensors) elements += t.numel();
    torch::Tensor extremes = torch::tensor({static_cast<double>(elements), -static_cast<double>(elements)}, torch::kDouble);
    communicator->all_reduce_max(extremes, "comparing model sizes");
    if (extremes[0].item<double>() != -extremes[1].item<double>())
      throw Error("rank " + std::to_string(distributed.rank) + " built a model of " + std::to_string(elements) +
                  " numbers, but another rank's differs (largest " + std::to_string(static_cast<std::int64_t>(extremes[0].item<double>())) +
                  "): the ranks read different data or vocabularies");
    torch::NoGradGuard no_grad;
    for (auto& t : tensors) communicator->broadcast(t, "sharing rank 0's parameters");
  }

  void prepare(Progress& progress) {
    if (setup.distributed.enabled()) {
      join_process_group();
    }
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

    phase("loading dataset");
    dataset = load_dataset(config.dataset, {.load_features = false, .load_images = config.get<ImageOptions>().max > 0}, progress);
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
    {
      // A copy of every training and label text: freed once the vocabulary is made, before the corpora are.
      std::vector<std::string> vocabulary_texts = dataset.train_text;
      vocabulary_texts.insert(vocabulary_texts.end(), dataset.label_text.begin(), dataset.label_text.end());
      method->build(vocabulary_texts, setup.run_dir);
    }
    use_cpu_threads(method->module(), at::get_num_threads());
    train_corpus = method->tokenizer().tokenize(dataset.train_text);
    test_corpus = method->tokenizer().tokenize(dataset.test_text);
    label_corpus = method->tokenizer().tokenize(dataset.label_text);
    std::vector<std::string>().swap(dataset.test_text);  // only its tokens are read from here on
    train_corpus.images = dataset.train_images;  // null without banks; only an encoder that fuses images reads them
    test_corpus.images = dataset.test_images;
    label_corpus.images = dataset.label_images;
    if (method->ranks_given_features()) {
      phase("reading the dataset's given features");
      load_given_features(dataset, progress);
      train_corpus.features = std::make_shared<const CsrMatrix>(std::move(*dataset.train_features));  // held once, by the corpora
      test_corpus.features = std::make_shared<const CsrMatrix>(std::move(*dataset.test_features));
      dataset.train_features.reset();
      dataset.test_features.reset();
    }
    phase(method->description());

    std::vector<std::int64_t> labelled;
    for (std::int64_t r = 0; r < dataset.num_train(); ++r)
      if (dataset.train_labels.row_size(r) > 0) labelled.push_back(r);
    held_out = method->held_out_queries(labelled);
    training_queries.clear();
    std::set_difference(labelled.begin(), labelled.end(), held_out.begin(), held_out.end(), std::back_inserter(training_queries));
    batcher = std::make_unique<QueryBatcher>(make_batch_order(config), config.batch_size, training_queries, config.seed);
    label_pool_rng.seed(config.seed ^ 0x6c6162656c706f6fULL);  // "labelpoo": any fixed offset from the batcher's seed

    eval_setup.truth = &dataset.test_labels;
    eval_setup.filter = &dataset.test_filter;
    eval_setup.inv_propensities = dataset.inverse_propensities();
    eval_setup.bins = decile_bins(dataset.label_frequencies());
    eval_setup.ks = config.eval_k;
    eval_setup.top = config.eval_top;
    check_eval_index(config.eval_index);
    eval_setup.index = resolved_eval_index(config.eval_index, dataset.num_labels(), config.eval_approximate_above);
    if (config.eval_index == "auto" && eval_setup.index != "exact") {
      // The automatic choice keeps its promise: each evaluation raises the probe until the inverted file keeps
      // kAutoEvalRecallTarget of the exact top 10, or searches exactly.
      eval_setup.recall_target = kAutoEvalRecallTarget;
      phase("evaluations search the labels through an inverted file (" + eval_setup.index + "; eval.index auto: " + std::to_string(dataset.num_labels()) +
            " labels, from eval.approximate_above " + std::to_string(config.eval_approximate_above) + "), its probe raised until it keeps " +
            two_decimals(kAutoEvalRecallTarget) + " of the exact top 10 (exact search when half the clusters do not), the recall logged");
    }

    if (config.tsne_every > 0) {
      snapshot_query = choose_snapshot_query();
      if (snapshot_query >= 0) snapshot_query_text = dataset.train_text[static_cast<std::size_t>(snapshot_query)];
    }
    // Only the training queries' tokens are read from here on: their texts (0.8 GB at 2.25M synthetic queries of
    // ~50 words) are not held through training. Freed as millions of small blocks, their pages go back to the
    // system only when asked for (so do the vocabulary's copy of every text and the test queries' texts).
    std::vector<std::string>().swap(dataset.train_text);
    return_freed_memory();

    state.stage = stages.empty() ? kDone : stages.front().name;
    if (setup.resume) {
      state = load_checkpoint(checkpoint_path(), *method, dataset.num_labels(), setup.store_id, setup.run_id, &resumed_optimizer_state);
      // The checkpoint's archive, read whole, is freed but for the optimiser's part: its pages go back to the system
      // before the optimiser is made.
      return_freed_memory();
      check_resumable(state);
      if (state.stage.empty()) state.stage = stages.front().name;
      batcher->load_state(state.sampler_state);
      if (!state.label_pool_rng.empty()) {
        std::istringstream rng_state(state.label_pool_rng);
        rng_state >> label_pool_rng;
        if (!rng_state) throw InputError(checkpoint_path().string(), "the label-pool random state does not parse");
      }
      phase("resumed from " + checkpoint_path().string() + " at step " + std::to_string(state.step));
      TrainEvent restored;
      restored.kind = TrainEvent::Kind::Restored;
      restored.step = state.step;
      restored.epoch = epoch_now();
      publish(restored);
    }
    last_checkpoint_step = state.step;
    last_checkpoint_time = Clock::now();
    if (distributed.enabled()) {
      share_parameters();
      // Dropout differs between ranks (rank 0 keeps the single-process stream; the others are seeded again at
      // every step, worker_step_seed). Batches and shortlists are rank 0's; the label-pool stream starts alike
      // everywhere, so ranks that split a batch draw the same pools (ranks training batch shards of their own
      // then draw for different queries).
      if (!distributed.is_main()) torch::manual_seed(config.seed + 1000003ULL * static_cast<std::uint64_t>(distributed.rank));
    }
    if (!setup.resume && setup.restart) {
      // A run that never reached a checkpoint starts over: what it recorded before is void.
      TrainEvent restored;
      restored.kind = TrainEvent::Kind::Restored;
      restored.step = 0;
      restored.epoch = 0;
      publish(restored);
    }
  }

  /// A checkpoint's training state must fit this run's dataset: one of another run (or a damaged one) is
  /// refused by name before any of its rows is used.
  void check_resumable(const TrainingState& s) const {
    const std::string file = checkpoint_path().string();
    const std::int64_t rows = dataset.num_train();
    const auto saved_stage = std::find_if(stages.begin(), stages.end(), [&](const StageSpec& stage) { return stage.name == s.stage; });
    // A stage whose batches are units of the method's own (xrlinear's tree nodes) has no rows to check.
    if (saved_stage == stages.end() || saved_stage->batches_are_training_rows)
      for (const auto& batch : s.epoch_batches)
        for (const std::int64_t row : batch)
          if (row < 0 || row >= rows)
            throw InputError(file, "its saved batches name training row " + std::to_string(row) + ", but the dataset has " + std::to_string(rows) +
                                       " training rows: the checkpoint belongs to another run or is damaged");
    if (!s.stage.empty() && s.stage != kDone && saved_stage == stages.end())
      throw InputError(file, "its stage \"" + s.stage + "\" is not a stage of method " + method->name());
  }

  /// The optimiser of `stage` over the method's parameter groups (AdamW; lr scheduled per group).
  void make_optimizer(const StageSpec& stage) {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    std::vector<torch::Tensor> lazy, deferred;
    base_lrs.clear();
    clipped_parameters.clear();
    for (ParameterGroup& group : method->parameter_groups(stage)) {
      if (group.parameters.empty()) continue;  // e.g. no DE head: no head group
      clipped_parameters.insert(clipped_parameters.end(), group.parameters.begin(), group.parameters.end());
      if (group.lazy_rows) lazy.insert(lazy.end(), group.parameters.begin(), group.parameters.end());
      else
        for (const torch::Tensor& p : group.parameters)
          // Not across processes: a checkpoint brings the rows up to date on rank 0 alone, whose rounding would then
          // part from the others'. Not on a GPU: the deferred update is a CPU loop (a GPU updates the whole table).
          if (config.deferred_rows_from > 0 && !distributed.enabled() && p.is_cpu() && p.dim() >= 2 && p.size(0) >= config.deferred_rows_from)
            deferred.push_back(p);
      groups.emplace_back(std::move(group.parameters),
                          std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(group.lr).weight_decay(group.weight_decay)));
      base_lrs.push_back(group.lr);
    }
    optimizer = std::make_unique<FusedAdamW>(std::move(groups), torch::optim::AdamWOptions(config.lr));
    for (const auto& p : lazy) optimizer->update_rows_lazily(p);
    std::string tables;
    for (const auto& p : deferred) {
      optimizer->defer_untouched_rows(p, {.second_moment_per_row = config.table_second_moment == "row",
                                          .bfloat16_first_moment = config.table_first_moment == "bfloat16"});
      tables += (tables.empty() ? "" : ", ") + std::to_string(p.size(0)) + " x " + std::to_string(p.numel() / std::max<std::int64_t>(1, p.size(0)));
    }
    if (!deferred.empty())
      phase("AdamW defers the untouched rows of " + std::to_string(deferred.size()) + (deferred.size() == 1 ? " table" : " tables") + " (" + tables +
            "; deferred_rows_from " + std::to_string(config.deferred_rows_from) + "), with a second moment per " + config.table_second_moment + " and a " + config.table_first_moment + " first moment");
    overlapped_reducer.reset();
    if (distributed.enabled() && config.distributed_overlap == "on") {
      std::vector<torch::Tensor> dense;
      for (const auto& p : clipped_parameters)
        if (!may_reduce_row_sparse(p) && p.requires_grad()) dense.push_back(p);
      // Small buckets: the first starts while most of backward is still to come; each costs one collective's latency.
      constexpr std::int64_t kOverlapBucketBytes = 4 << 20;
      if (!dense.empty()) overlapped_reducer = std::make_unique<OverlappedGradientReducer>(*communicator, dense, kOverlapBucketBytes);
    }
  }

  std::int64_t batches_per_epoch() const {
    return std::max<std::int64_t>(1, batch_count(static_cast<std::int64_t>(training_queries.size()), config.batch_size));
  }

  bool is_held_out(std::int64_t row) const { return std::binary_search(held_out.begin(), held_out.end(), row); }

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
      if (is_held_out(config.tsne_query))
        throw ConfigError("tsne.query: training row " + std::to_string(config.tsne_query) +
                          " is held out of training (unidec.concat_holdout, or xrlinear.fusion_weight_from: held-out), so no batch trains it; "
                          "pick another row or -1 for automatic");
      return config.tsne_query;
    }
    std::int64_t best = -1;
    for (const std::int64_t r : training_queries) {
      if (labels.row_size(r) >= 3) return r;
      if (best < 0 || labels.row_size(r) > labels.row_size(best)) best = r;
    }
    return best;
  }

  /// The t-SNE of the snapshot query's positives and negatives in `mode`'s space (the training space),
  /// published. Uses neither the batcher's nor torch's random generator, so taking snapshots never changes
  /// the training itself.
  void take_snapshot(double epoch, const InferenceMode& mode) {
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
      input.query_text = snapshot_query_text;
      input.epoch = epoch;
      input.step = state.step;
      const std::vector<std::int64_t> row{snapshot_query};
      input.query_embedding = method->encode_query_rows(mode.query_encoder, train_corpus, row);
      input.label_embeddings = mode.label_matrix;
      for (std::int32_t l : dataset.train_labels.row_indices(snapshot_query)) input.positives.push_back(l);
      input.in_batch_pool = std::move(pool.labels);
      input.batch_queries = pool.batch_queries;
      input.label_text = &dataset.label_text;
      NegativesSnapshotOptions options;
      options.seed = config.seed + static_cast<std::uint64_t>(state.step);
      options.tsne.seed = config.seed;
      TrainEvent e;
      e.kind = TrainEvent::Kind::Snapshot;
      e.epoch = epoch;
      e.query = snapshot_query;
      e.message = negatives_snapshot_json(input, options);
      publish(e);
    } catch (const std::exception& error) {
      // A diagnostic view must not end a run: say why it is missing and train on.
      std::string message = error.what();
      if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) message = torch_error->what_without_backtrace();
      phase("t-SNE snapshot skipped: " + message);
    }
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
  /// matrices then take their place rather than coming on top (UniDEC at 1.3M labels: 2.1 GB of 8.9). Null when
  /// they are smaller, or when they could not be written (a full disk: then they stay, and the run goes on).
  std::unique_ptr<SetAsideTensors> set_aside_idle_state() {
    std::vector<torch::Tensor> idle = method->idle_during_evaluation();
    if (optimizer)
      for (torch::Tensor& moment : optimizer->moments()) idle.push_back(std::move(moment));
    const std::int64_t bytes = SetAsideTensors::set_aside_bytes(idle);
    if (bytes == 0 || bytes < (config.eval_set_aside_mb << 20)) return nullptr;
    prefetcher.drop();  // nothing prepared ahead reads a shortlist while it is away
    try {
      auto aside = std::make_unique<SetAsideTensors>(idle, set_aside_path());
      idle.clear();  // the last other handles: the memory goes back now
      return_freed_memory();
      char size[32];
      std::snprintf(size, sizeof size, "%.1f MB", static_cast<double>(bytes) / (1 << 20));
      phase("evaluation: " + std::string(size) + " of optimiser moments and shortlists set aside in " +
            set_aside_path().filename().string() + " until it ends (eval.set_aside_mb " + std::to_string(config.eval_set_aside_mb) + ")");
      return aside;
    } catch (const Error& e) {
      phase(std::string(e.what()) + "; evaluating with them in memory");
      return nullptr;
    }
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
    phase("evaluating");
    const auto started = Clock::now();
    const RagOptions& rag_options = config.get<RagOptions>();
    const RagSource rag{.train_queries = &train_corpus, .train_labels = &dataset.train_labels, .top = rag_options.top,
                        .lambda = rag_options.lambda, .temperature = rag_options.temperature};
    // Before the last evaluation, eval.max_queries ranks an even sample of the test queries. IRENE's modes
    // score subsets by test row, so it always ranks them all.
    const bool sampled = !final && config.eval_max_queries > 0 && test_corpus.size() > config.eval_max_queries && !method->builds_on_another_run();
    if (sampled) {
      if (!test_sample) test_sample = std::make_unique<TestSample>(test_corpus, eval_setup, config.eval_max_queries);
      phase("evaluating on an even sample of " + std::to_string(test_sample->corpus.size()) + " of " + std::to_string(test_corpus.size()) +
            " test queries (eval.max_queries; the last evaluation ranks them all)");
    }
    ModeEvaluation evaluation = evaluate_modes(*method, sampled ? test_sample->corpus : test_corpus, label_corpus, sampled ? test_sample->setup : eval_setup,
                                               reporter, rag_options.use == "on" ? &rag : nullptr);
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    for (std::size_t m = 0; m < evaluation.modes.size(); ++m) {
      const EvalResult& result = evaluation.results[m];
      char calibrated[160] = "";
      if (result.calibration_queries > 0)
        std::snprintf(calibrated, sizeof calibrated, "%s probe %lld of %lld cluster%s kept %.3f of the exact top 10 on %lld test queries",
                      result.search_fell_back_to_exact ? "the inverted file's" : "at", static_cast<long long>(result.search_probe),
                      static_cast<long long>(result.search_clusters), result.search_clusters == 1 ? "" : "s", result.calibration_recall_at_10,
                      static_cast<long long>(result.calibration_queries));
      if (result.search_fell_back_to_exact) {
        phase("evaluation (" + evaluation.modes[m].name + "): exact search: " + calibrated + ", under " + two_decimals(eval_setup.recall_target));
      } else if (result.search_recall_queries > 0) {
        char recall[32];
        std::snprintf(recall, sizeof recall, "%.3f", result.search_recall_at_10);
        std::string searched = eval_setup.index + " search";
        if (const std::vector<std::string>& from = evaluation.modes[m].candidates_from; !from.empty()) {
          searched = "the top " + std::to_string(kCandidatesPerIndex) + " candidates of " + eval_setup.index + " searches of ";
          for (std::size_t i = 0; i < from.size(); ++i) searched += (i == 0 ? "" : i + 1 == from.size() ? " and " : ", ") + from[i];
          searched += ", ranked exactly,";
        }
        phase("evaluation (" + evaluation.modes[m].name + "): " + searched + (result.calibration_queries > 0 ? std::string(" ") + calibrated + ";" : std::string(",")) +
              " recall@10 " + recall + " against exact on " + std::to_string(result.search_recall_queries) + " sampled test queries");
      }
    }
    const EvalResult& primary = evaluation.results.front();
    TrainEvent e;
    e.kind = TrainEvent::Kind::Evaluation;
    e.epoch = epoch;
    e.seconds = seconds;
    e.metrics = primary.metrics;
    // Every mode under its prefix, the primary's too: the primary can change within a run (NGAME's embedding
    // in M1, fused ranking from M4), and its curve is that mode's, not the plain names' (evaluation_modes.h).
    for (std::size_t m = 0; m < evaluation.modes.size(); ++m)
      for (const auto& [name, value] : evaluation.results[m].metrics) {
        MetricKey key = MetricKey::parse(name);
        key.mode = evaluation.modes[m].metric_prefix;
        if (!key.mode.empty()) e.mode_metrics.emplace_back(key.str(), value);
      }
    for (const auto& [name, bars] : primary.deciles) e.decile_tables.emplace_back(name, std::vector<double>(bars.begin(), bars.end()));
    if (auto it = primary.deciles.find("P@5"); it != primary.deciles.end()) e.deciles = it->second;
    const auto training_space = std::find_if(evaluation.modes.begin(), evaluation.modes.end(),
                                             [](const InferenceMode& mode) { return mode.training_space; });
    if (training_space != evaluation.modes.end()) {
      const ScoreSpread spread = score_spread(evaluation.queries.at(training_space->query_encoder), training_space->label_matrix);
      e.score_spread = spread.spread;
      e.score_mean = spread.mean;
    }
    publish(e);
    last_eval = primary;
    last_modes.clear();
    for (std::size_t m = 0; m < evaluation.modes.size(); ++m) last_modes.emplace_back(evaluation.modes[m].name, evaluation.results[m]);
    ++evaluations_done;
    if (training_space != evaluation.modes.end() && config.tsne_every > 0 && (final || evaluations_done % config.tsne_every == 0))
      take_snapshot(epoch, *training_space);
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
    save_checkpoint(checkpoint_path(), *method, optimizer.get(), state);
    last_checkpoint_step = state.step;
    last_checkpoint_time = Clock::now();
  }

  /// A checkpoint inside an epoch is due after checkpoint.every_steps steps or checkpoint.every_minutes of
  /// training since the last one (how much a crash can lose).
  /// With deferred rows, one placed by time waits for a step at which the rows are brought up to date anyway
  /// (`synced_here`, deferred_sync_steps): the checkpoint then changes none of the run's arithmetic.
  bool checkpoint_due(bool synced_here) const {
    if (state.step == last_checkpoint_step) return false;
    if (config.checkpoint_every_steps > 0 && state.step - last_checkpoint_step >= config.checkpoint_every_steps) return true;
    if (syncs_deferred_rows() && !synced_here) return false;
    return config.checkpoint_every_minutes > 0 &&
           std::chrono::duration<double>(Clock::now() - last_checkpoint_time).count() >= 60 * config.checkpoint_every_minutes;
  }

  /// Whether this stage's optimiser defers table rows and brings them up to date every deferred_sync_steps steps.
  bool syncs_deferred_rows() const { return config.deferred_sync_steps > 0 && optimizer && optimizer->defers_rows(); }

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
        reduce_gradients(*communicator, clipped_parameters, /*average=*/!split, control_flags(), overlapped, split ? 0.0 : result.loss);
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
    method->begin_stage(stage, ctx);
    // A stage may add parameters (NGAME's classifiers, UniDEC's table, randomly initialised per rank): every
    // rank starts it from rank 0's.
    if (distributed.enabled()) share_parameters();
    make_optimizer(stage);
    // Resumed inside this stage: continue its optimiser (a checkpoint at a stage boundary has none).
    if (setup.resume) {
      // The optimiser's state as the checkpoint's reading kept it (the file is not read again).
      if (resumed_optimizer_state) load_optimizer_state(*resumed_optimizer_state, checkpoint_path(), *optimizer);
      resumed_optimizer_state.reset();
      // The optimiser's state made before the saved one replaced it is freed: its pages go back to the system
      // instead of staying in the heap through training.
      return_freed_memory();
    }
    setup.resume = false;

    const std::int64_t own = method->batches_per_epoch(stage);
    const std::int64_t per_epoch = own >= 0 ? own : batches_per_epoch();
    const LrSchedule schedule{.total_steps = per_epoch * stage.epochs,
                              .warmup_steps = static_cast<std::int64_t>(config.warmup * static_cast<double>(per_epoch * stage.epochs)),
                              .kind = config.schedule};
    const double offset = epoch_offset(index);
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

      const std::string epoch_task = stage.epoch_label + " " + std::to_string(epoch + 1) + "/" + std::to_string(stage.epochs);
      phase(epoch_task);
      progress.start(epoch_task, static_cast<std::int64_t>(state.epoch_batches.size()));
      method->module().train();
      const auto epoch_start = Clock::now();
      std::int64_t samples = 0;
      const auto batches_in_epoch = static_cast<double>(state.epoch_batches.size());
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
        if (!distributed.enabled()) {
          wait_while_paused();
        } else if (pause_agreed) {
          // Rank 0 was paused when the last step ended: it waits, the others wait for it.
          if (distributed.is_main()) wait_while_paused();
          communicator->hold_for_main("pause");
          pause_agreed = false;
        }
        // Several processes stop together: at the step after the one whose gradient reduction carried the request.
        if (distributed.enabled() ? stop_agreed : stop_requested.load()) throw StopRequested{};
        // Every run brings its deferred rows up to date at the same steps, whether a checkpoint falls there or not.
        const bool synced_here = syncs_deferred_rows() && state.step > 0 && state.step % config.deferred_sync_steps == 0;
        if (synced_here) bring_rows_up_to_date();
        if (checkpoint_due(synced_here)) checkpoint();  // resumes at this batch
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
        StepResult result = step(stage, batch, prepared.get(), ctx);
        if (!std::isfinite(result.loss)) {
          throw Error("step " + std::to_string(state.step) + " (" + epoch_task + "): the loss is " + std::to_string(result.loss) +
                      "; lower lr (" + std::to_string(config.lr) + ") or raise temperature (" + std::to_string(config.get<LossOptions>().temperature) + ")");
        }
        if (stage.clip_gradients && config.grad_clip > 0) clip_gradient_norm(clipped_parameters, config.grad_clip);
        const double factor = schedule.factor(state.step - state.stage_start_step);
        for (std::size_t g = 0; g < optimizer->param_groups().size(); ++g)
          static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[g].options()).lr(base_lrs[g] * factor);
        // Gradients are dropped after each step rather than zeroed: the next backward then hands its freshly
        // computed buffers to the parameters instead of adding them into zeroed ones (for an embedding table,
        // two passes over the table saved). A parameter the step did not reach gets zeros, so the optimiser
        // still decays it exactly as after zero_grad().
        for (const auto& p : clipped_parameters)
          if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        optimizer->step();
        for (const auto& p : clipped_parameters) p.mutable_grad().reset();
        ++state.step;
        samples += static_cast<std::int64_t>(batch.size());
        const double seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
        TrainEvent e;
        e.kind = TrainEvent::Kind::Step;
        e.total_steps = schedule.total_steps;
        e.epoch = offset + static_cast<double>(epoch) + static_cast<double>(state.batch_in_epoch + 1) / batches_in_epoch;
        e.stage = stage.name;
        e.loss_series = stage.loss_series;
        e.classifier_stage = stage.loss_series != "loss";
        e.loss = result.loss;
        e.lr = base_lrs.empty() ? 0 : base_lrs[0] * factor;
        e.samples_per_s = seconds > 0 ? static_cast<double>(batch.size()) / seconds : 0;
        publish(e);
        publish_system_use(e.epoch, false);
        progress.update(state.batch_in_epoch + 1);
      }
      progress.finish();
      const double epoch_seconds = std::chrono::duration<double>(Clock::now() - epoch_start).count();
      TrainEvent end;
      end.kind = TrainEvent::Kind::EpochEnd;
      end.epoch = offset + static_cast<double>(epoch + 1);
      end.stage = stage.name;
      end.samples_per_s = epoch_seconds > 0 ? static_cast<double>(samples) / epoch_seconds : 0;
      publish(end);
      publish_system_use(end.epoch, true);
      state.batch_in_epoch = 0;
      snapshot_batches = std::move(state.epoch_batches);
      state.epoch_batches.clear();
      const bool last = epoch + 1 == stage.epochs;
      if (!last && stage.evaluate_between_epochs && config.eval_every > 0 && (epoch + 1) % config.eval_every == 0) {
        try {
          evaluate(offset + static_cast<double>(epoch + 1));
        } catch (const EvaluationStopped&) {
          ++state.epoch;  // the epoch is done: the checkpoint resumes at the next one
          throw;
        }
      }
      if (!last && config.checkpoint_every > 0 && (epoch + 1) % config.checkpoint_every == 0) {
        ++state.epoch;  // the checkpoint resumes at the next epoch
        checkpoint();
        --state.epoch;
      }
    }
    return true;
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
        state.stage = index + 1 < stages.size() ? stages[index + 1].name : kDone;
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
