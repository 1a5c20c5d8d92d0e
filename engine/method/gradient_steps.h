#pragma once
// Engine-internal (includes torch). How a method trains its stages by gradient steps (DEXML, NGAME, UniDEC,
// IRENE): what each stage optimises, the batches of an epoch and one step on a batch. The trainer clips,
// schedules and steps the optimiser. A method fitted without gradients (xrlinear) has StageFitting instead.
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/method/training_stages.h"
#include "engine/optim/parameter_group.h"

namespace xmc {

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

/// A method's gradient training: the trainer asks it for parameter groups and batches and has it step.
class GradientSteps {
 public:
  virtual ~GradientSteps() = default;

  /// What `stage` optimises; the trainer makes one optimiser over these groups.
  virtual std::vector<ParameterGroup> parameter_groups(const StageSpec& stage) = 0;
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
