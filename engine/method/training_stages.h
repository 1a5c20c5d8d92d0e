#pragma once
// Engine-internal (includes torch). What a method is to the trainer: its stages, in order, and what it may use
// while it trains them. How a stage trains is a capability of its own: gradient steps (gradient_steps.h) or
// fitting without gradients (stage_fitting.h). The trainer (engine/train/trainer.h) runs every method's loop
// through these alone, besides the method's ranking (for evaluations) and state (for checkpoints).
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
  std::string loss_series = "loss";     ///< scalar key the step losses (a fitted part's objective) are stored under; "" for
                                        ///< work whose outcome is not a loss (xrlinear's choice of settings): nothing is stored or plotted
  bool clip_gradients = true;           ///< clip to grad_clip before each optimiser step (gradient steps only)
  bool evaluate_between_epochs = true;  ///< evaluations every eval.every epochs (else only at the stage's end)
  /// An evaluation when the stage ends and another follows (false for a stage whose model is not yet the run's: xrlinear's
  /// choice of settings, whose trees leave the held-out queries out).
  bool evaluate_at_end = true;
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

/// A method's stages, whatever trains them: gradient steps (gradient_steps.h) or fitting (stage_fitting.h).
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
  /// Which of `labelled_rows` (the training queries with labels, ascending) must never train, ascending
  /// (UniDEC's held-out queries, on which it chooses its concat weight): the trainer leaves them out of every
  /// batch, the step count and the t-SNE query. Asked once after build(); it must give the same rows on every
  /// rank and after a resume.
  virtual std::vector<std::int64_t> held_out_queries(std::span<const std::int64_t> /*labelled_rows*/) { return {}; }
};

}  // namespace xmc
