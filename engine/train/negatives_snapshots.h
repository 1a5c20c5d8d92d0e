#pragma once
// Engine-internal (includes torch). The t-SNE snapshots of one training query's negatives that a run takes
// after its evaluations (every tsne.every, and the final one): which query (tsne.query, checked, or the first
// training row with >= 3 labels), the batches it was last seen in, and the snapshot itself as a Snapshot event.
// Uses neither the batcher's nor torch's random generator, so taking snapshots never changes the training.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/method/label_ranking.h"
#include "engine/records/train_events.h"

namespace xmc {

struct Dataset;

class NegativesSnapshots {
 public:
  using Batches = std::vector<std::vector<std::int64_t>>;

  /// `training_queries` and `held_out` ascending. Throws ConfigError when tsne.query names a row no batch
  /// trains. Reads the query's text now: the dataset's training texts may be freed after.
  NegativesSnapshots(const Dataset& dataset, std::int64_t tsne_query, std::int64_t tsne_every, std::uint64_t seed,
                     std::span<const std::int64_t> training_queries, std::span<const std::int64_t> held_out);

  /// An epoch ended with these batches: a later snapshot (after the epoch's evaluation) looks for the query in them.
  void epoch_ended(Batches batches) { last_epoch_batches_ = std::move(batches); }

  /// Counts an evaluation; whether a snapshot follows it (`final`: the run's last evaluation always gets one).
  bool due_after_evaluation(bool final);

  /// The snapshot of the query's positives and negatives in `mode`'s space (the training space) as of `step`,
  /// `current_batches` the epoch under way (when stopped mid-epoch by max_steps; else empty). Failures never end a
  /// run: the reason goes to `phase` and nothing is published.
  void take(LabelRanking& ranking, const InferenceMode& mode, const TokenizedCorpus& train_corpus, const Batches& current_batches,
            double epoch, std::int64_t step, const std::function<void(const std::string&)>& phase,
            const std::function<void(TrainEvent)>& publish) const;

 private:
  const Dataset& dataset_;
  std::int64_t every_ = 0;
  std::uint64_t seed_ = 0;
  std::int64_t query_ = -1;  ///< -1: snapshots off
  std::string query_text_;
  Batches last_epoch_batches_;  ///< not in checkpoints: the trainer's epoch batches are cleared at each epoch end
  std::int64_t evaluations_ = 0;
};

}  // namespace xmc
