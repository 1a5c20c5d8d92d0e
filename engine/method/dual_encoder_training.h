#pragma once
// Engine-internal (includes torch). Training of the shared encoder and DE head on label pools: DEXML's
// whole recipe and NGAME's stage M1. Each epoch's batches come from the query batcher (random, or
// clusters of the stale query embeddings); each query scores one sampled positive per batch query, plus
// hard negatives from its refreshed shortlist (negatives = hard) or every label with gradient caching
// (negatives = all).
#include <torch/torch.h>

#include <span>
#include <vector>

#include "engine/loss/loss_entry.h"
#include "engine/method/method.h"
#include "engine/method/xmc_model.h"
#include "engine/sampler/label_pool.h"

namespace xmc {

class EpochQueryEncodings;

class DualEncoderTraining {
 public:
  explicit DualEncoderTraining(const ComponentConfig& config);

  /// AdamW groups of the encoder and DE head: weights with decay, biases and norms without, the DE head at
  /// lr × head_lr_scale. Classifier residuals (NGAME's M4) are not part of this stage.
  std::vector<ParameterGroup> parameter_groups(XmcModel& model) const;
  /// Clusters the training queries, encoded afresh, when the curriculum asks for it and refreshes the
  /// hard-negative shortlists when due.
  std::vector<std::vector<std::int64_t>> epoch_batches(XmcModel& model, std::int64_t epoch, TrainContext& context);
  /// The configured loss (kind and options) of `scores` [B x P] against `positive_mask` [B x P].
  torch::Tensor loss(const torch::Tensor& scores, const torch::Tensor& positive_mask) const;
  /// The batch's label pool (drawn from context.label_pool_rng) and, unless every label is scored in chunks,
  /// the encoder inputs of the rows this process encodes.
  std::shared_ptr<PreparedBatch> prepare(const XmcModel& model, std::span<const std::int64_t> batch, TrainContext& context) const;
  /// Forward and backward of one batch against its label pool; `prepared` is prepare()'s, or null.
  StepResult step(XmcModel& model, std::span<const std::int64_t> batch, const PreparedBatch* prepared, TrainContext& context);

  /// Drops the hard-negative shortlist once the stage has trained (N x S ids: 0.9 GB at 2.25M queries x 100),
  /// before the evaluation; a later epoch would search it again.
  void release_shortlist() { shortlist_ = torch::Tensor(); }
  /// The hard-negative shortlist as held (undefined before the first refresh): a handle sharing it.
  torch::Tensor shortlist() const { return shortlist_; }

  void save_state(torch::serialize::OutputArchive& archive) const;
  void load_state(torch::serialize::InputArchive& archive);

 private:
  /// Each training query's hard-negative shortlist from the current model; in data-parallel training each
  /// rank searches for its slice of the queries and the slices are gathered.
  /// `encoded`: the training queries already encoded at this epoch's start (the clustering's), or null.
  torch::Tensor refreshed_shortlist(XmcModel& model, TrainContext& context, const EpochQueryEncodings* encoded) const;
  /// step() on one rank of a data-parallel job: the same pool on every rank, each rank encoding its share of
  /// the queries and of the pool's labels; the loss sees the gathered whole.
  struct Prepared;
  StepResult distributed_step(XmcModel& model, std::span<const std::int64_t> batch, const Prepared& prepared, TrainContext& context);
  /// This rank's part of the loss of the whole batch against every label, from its slice of the scores (the
  /// labels from label_begin on) and the whole positive mask.
  ShardedLoss sharded_loss(Communicator& communicator, const torch::Tensor& scores, const torch::Tensor& whole_mask,
                           std::int64_t label_begin) const;

  const ComponentConfig& config_;
  const LossEntry* loss_;  ///< the config's loss (registered: lives as long as the program)
  LossOptions loss_options_;
  torch::Tensor shortlist_;  ///< [num_train x S] int32 hard-negative candidates (undefined until the first refresh)
  std::int64_t shortlist_epoch_ = -1;
};

}  // namespace xmc
