#pragma once
// Engine-internal (includes torch). What a method is to the trainer: its stages, what each optimises, the
// batches of an epoch and one training step. The trainer (engine/train/trainer.h) runs every method's loop
// through this interface alone, besides the method's ranking (for evaluations) and state (for checkpoints).
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/component_config.h"
#include "engine/core/error.h"
#include "engine/core/progress.h"
#include "engine/optim/parameter_group.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

struct Dataset;
class QueryBatcher;
class Communicator;

/// One stage of a method's training; the trainer runs the stages in order.
struct StageSpec {
  std::string name;                     ///< stored in checkpoints: "encoder", "m1", "m4"
  std::string epoch_label = "epoch";    ///< shown with the epoch counter: "epoch 2/5", "M4 epoch 1/3"
  std::int64_t epochs = 0;
  std::string loss_series = "loss";     ///< scalar key the step losses are stored under; "" for steps whose outcome is not a
                                        ///< loss (xrlinear's choice of settings): nothing is stored or plotted for them
  bool clip_gradients = true;           ///< clip to grad_clip before each optimiser step
  bool evaluate_between_epochs = true;  ///< evaluations every eval.every epochs (else only at the stage's end)
  /// An evaluation when the stage ends and another follows (false for a stage whose model is not yet the run's: xrlinear's
  /// choice of settings, whose trees leave the held-out queries out).
  bool evaluate_at_end = true;
  /// The stage's batches list training query rows (false: units of the method's own, e.g. xrlinear's tree nodes,
  /// which the trainer never reads as rows).
  bool batches_are_training_rows = true;
};

/// Where a process stands in data-parallel training (rank 0 of 1 without it). The trainer shards batches and
/// reduces gradients; a method that splits a batch's work itself (splits_batch_across_ranks) gathers through
/// `communicator`.
struct DistributedContext {
  int rank = 0;
  int world_size = 1;
  Communicator* communicator = nullptr;  ///< null in a single process
  bool is_main() const { return rank == 0; }
  bool enabled() const { return communicator != nullptr && world_size > 1; }
};

/// What a method may use while it trains: data, device, random streams and where to report work.
/// The training queries' embeddings that NGAME's and UniDEC's clustering orders (encoded afresh at each
/// clustering, as NGAME's code does, and dropped once the batches are drawn) are half precision: they only order
/// queries into clusters, and at 2.25M training queries x 256 they are 1.15 GB rather than 2.3 GB.
inline constexpr torch::ScalarType kClusteringEmbeddingType = torch::kHalf;

struct TrainContext {
  const Dataset& dataset;
  const TokenizedCorpus& train_corpus;
  const TokenizedCorpus& label_corpus;
  torch::Device device;
  DistributedContext distributed;
  QueryBatcher& batcher;                        ///< the epoch's query order (its own random stream)
  std::mt19937_64& label_pool_rng;              ///< sampled positives and hard negatives of label pools
  Progress& progress;                           ///< reports work between steps (encoding, clustering)
  std::function<void(const std::string&)> phase;  ///< announces a phase ("refreshing hard-negative shortlists")
  /// Records a config value the run chose for itself (unidec.concat_weight on held-out queries): stored beside
  /// the configured one and shown with it (engine/records/chosen_settings.h).
  std::function<void(const std::string& key, double value)> chose;
};

/// The outcome of one training step on one batch.
struct StepResult {
  double loss = 0;
};

/// What a training step needs of its batch that does not depend on the parameters' values (a label pool, the
/// encoder's inputs already on the device), built ahead so that a prefetching trainer prepares batch i + 1
/// while batch i trains. Each method has its own kind.
struct PreparedBatch {
  virtual ~PreparedBatch() = default;
};

/// A PreparedBatch that keeps the rows it was prepared for, so that a step can check it got its own.
struct PreparedRows : PreparedBatch {
  std::vector<std::int64_t> batch;
};

/// What a step trains on: `prepared` (what prepare_step() built ahead) as the method's kind, or, when nothing
/// was prepared ahead, what `prepare` builds now, kept alive by `holder`. Throws Error naming `step` when it was
/// prepared for other rows than `batch`.
template <class Prepared>
const Prepared& prepared_for(std::span<const std::int64_t> batch, const PreparedBatch* prepared, std::shared_ptr<PreparedBatch>& holder,
                             const std::function<std::shared_ptr<PreparedBatch>()>& prepare, std::string_view step) {
  if (prepared == nullptr) {
    holder = prepare();
    prepared = holder.get();
  }
  const auto& mine = dynamic_cast<const Prepared&>(*prepared);
  if (!std::equal(batch.begin(), batch.end(), mine.batch.begin(), mine.batch.end()))
    throw Error(std::string(step) + ": the batch prepared ahead is another batch's (" + std::to_string(mine.batch.size()) + " rows for " +
                std::to_string(batch.size()) + ")");
  return mine;
}

/// A method's training: the trainer asks it for stages, parameter groups and batches and has it step.
class TrainingStages {
 public:
  virtual ~TrainingStages() = default;

  /// The stages of the run, in order.
  virtual std::vector<StageSpec> stages() const = 0;

  /// Called before the first epoch of `stage` (also when a run resumes inside it).
  virtual void begin_stage(const StageSpec& stage, TrainContext& context) = 0;
  /// Called once `stage` has trained its last epoch, before the evaluation and checkpoint that follow (IRENE
  /// keeps the generator that selected best here).
  virtual void end_stage(const StageSpec& /*stage*/, TrainContext& /*context*/) {}
  /// What `stage` optimises; the trainer makes one optimiser over these groups.
  virtual std::vector<ParameterGroup> parameter_groups(const StageSpec& stage) = 0;
  /// Which of `labelled_rows` (the training queries with labels, ascending) must never train, ascending
  /// (UniDEC's held-out queries, on which it chooses its concat weight): the trainer leaves them out of every
  /// batch, the step count and the t-SNE query. Asked once after build(); it must give the same rows on every
  /// rank and after a resume.
  virtual std::vector<std::int64_t> held_out_queries(std::span<const std::int64_t> /*labelled_rows*/) { return {}; }
  /// How many batches an epoch of `stage` has, when the method draws its batches from other rows than the
  /// dataset's training queries with labels (-1: those rows, in batches of batch_size). Asked after begin_stage.
  virtual std::int64_t batches_per_epoch(const StageSpec& /*stage*/) const { return -1; }
  /// Data-parallel training: true when train_step() takes the whole batch on every rank and splits the work
  /// itself (each rank encodes its share and gathers the rest, so the loss sees the whole batch's pool, as in
  /// one process): the trainer then sums the ranks' gradients. False: the trainer gives each rank a contiguous
  /// shard of the batch as a batch of its own and averages the gradients.
  virtual bool splits_batch_across_ranks(const StageSpec& /*stage*/) const { return false; }
  /// The batches (training query rows) of epoch `epoch` of `stage`.
  virtual std::vector<std::vector<std::int64_t>> epoch_batches(const StageSpec& stage, std::int64_t epoch, TrainContext& context) = 0;
  /// True when epoch_batches() may be cut short by xmc::Cancelled (a stop asked for during its clustering or
  /// shortlist refresh) and called again for the same epoch with the same result: it changes no state a checkpoint
  /// saves before it is done, or none that the second call does not make again. The trainer puts the sampler back.
  virtual bool epoch_batches_can_stop() const { return false; }
  /// Builds ahead what train_step() needs of `batch`, or null when the method prepares nothing ahead. May run
  /// on another thread while the previous step trains: it may read the dataset, the corpora and state that
  /// only changes between epochs, draw from context.label_pool_rng (the trainer puts the stream back when it
  /// drops a prepared batch), and change nothing else. A method whose prepare_step() builds something must
  /// leave label_pool_rng to it: its train_step() runs beside the next batch's preparation.
  virtual std::shared_ptr<PreparedBatch> prepare_step(const StageSpec& /*stage*/, std::span<const std::int64_t> /*batch*/,
                                                      TrainContext& /*context*/) {
    return nullptr;
  }
  /// Forward and backward of one batch: gradients accumulate in the parameters; the loss may be
  /// non-finite (the trainer reports it). `prepared` is what prepare_step() built for this batch (null when it
  /// built nothing).
  virtual StepResult train_step(const StageSpec& stage, std::span<const std::int64_t> batch, const PreparedBatch* prepared,
                                TrainContext& context) = 0;
};

}  // namespace xmc
