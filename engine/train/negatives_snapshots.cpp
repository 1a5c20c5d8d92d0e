#include "engine/train/negatives_snapshots.h"

#include <algorithm>

#include "engine/analysis/negatives_snapshot.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"

namespace xmc {
namespace {

/// tsne.query, checked, or the first training row with >= 3 labels (else the first with the most).
std::int64_t choose_query(const Dataset& dataset, std::int64_t tsne_query, std::span<const std::int64_t> training_queries,
                          std::span<const std::int64_t> held_out) {
  const auto& labels = dataset.train_labels;
  if (tsne_query >= 0) {
    if (tsne_query >= dataset.num_train())
      throw ConfigError("tsne.query: got " + std::to_string(tsne_query) + ", but the training set has " + std::to_string(dataset.num_train()) +
                        " rows; pick a row in [0, " + std::to_string(dataset.num_train()) + ") or -1 for automatic");
    if (labels.row_size(tsne_query) == 0)
      throw ConfigError("tsne.query: training row " + std::to_string(tsne_query) +
                        " has no labels (so no batch trains it); pick a row with labels or -1 for automatic");
    if (std::binary_search(held_out.begin(), held_out.end(), tsne_query))
      throw ConfigError("tsne.query: training row " + std::to_string(tsne_query) +
                        " is held out of training (unidec.concat_holdout, or xrlinear.fusion_weight_from: held-out), so no batch trains it; "
                        "pick another row or -1 for automatic");
    return tsne_query;
  }
  std::int64_t best = -1;
  for (const std::int64_t r : training_queries) {
    if (labels.row_size(r) >= 3) return r;
    if (best < 0 || labels.row_size(r) > labels.row_size(best)) best = r;
  }
  return best;
}

}  // namespace

NegativesSnapshots::NegativesSnapshots(const Dataset& dataset, std::int64_t tsne_query, std::int64_t tsne_every, std::uint64_t seed,
                                       std::span<const std::int64_t> training_queries, std::span<const std::int64_t> held_out)
    : dataset_(dataset), every_(tsne_every), seed_(seed) {
  if (every_ <= 0) return;
  query_ = choose_query(dataset, tsne_query, training_queries, held_out);
  if (query_ >= 0 && static_cast<std::size_t>(query_) < dataset.train_text.size()) query_text_ = dataset.train_text[static_cast<std::size_t>(query_)];
}

bool NegativesSnapshots::due_after_evaluation(bool final) {
  ++evaluations_;
  return query_ >= 0 && every_ > 0 && (final || evaluations_ % every_ == 0);
}

void NegativesSnapshots::take(LabelRanking& ranking, const InferenceMode& mode, const TokenizedCorpus& train_corpus, const Batches& current_batches,
                              double epoch, std::int64_t step, const std::function<void(const std::string&)>& phase,
                              const std::function<void(TrainEvent)>& publish) const {
  if (query_ < 0) return;
  try {
    phase("t-SNE of the negatives of training query " + std::to_string(query_));
    // Mid-epoch (stopped by max_steps) the current epoch's batches, else the last finished epoch's.
    const Batches& batches = current_batches.empty() ? last_epoch_batches_ : current_batches;
    QueryBatchPool pool = in_batch_negatives(dataset_.train_labels, batches, query_);
    if (pool.batch_queries == 0) {
      // E.g. resumed with no epoch left to train: which negatives its batch gave it is unknown.
      phase("t-SNE snapshot skipped: training query " + std::to_string(query_) + " is in no batch seen since the run started");
      return;
    }
    NegativesSnapshotInput input;
    input.query = query_;
    input.query_text = query_text_;
    input.epoch = epoch;
    input.step = step;
    const std::vector<std::int64_t> row{query_};
    input.query_embedding = ranking.encode_query_rows(mode.query_encoder, train_corpus, row);
    input.label_embeddings = mode.label_matrix;
    for (std::int32_t l : dataset_.train_labels.row_indices(query_)) input.positives.push_back(l);
    input.in_batch_pool = std::move(pool.labels);
    input.batch_queries = pool.batch_queries;
    input.label_text = &dataset_.label_text;
    NegativesSnapshotOptions options;
    options.seed = seed_ + static_cast<std::uint64_t>(step);
    options.tsne.seed = seed_;
    TrainEvent e;
    e.kind = TrainEvent::Kind::Snapshot;
    e.epoch = epoch;
    e.query = query_;
    options.tsne.layout_every = 50;  // the map as it forms, ten times a snapshot
    e.message = negatives_snapshot_json(input, options, [&](const std::string& forming) {
      TrainEvent so_far = e;
      so_far.kind = TrainEvent::Kind::SnapshotForming;
      so_far.message = forming;
      publish(std::move(so_far));
    });
    publish(std::move(e));
  } catch (const std::exception& error) {
    // A diagnostic view must not end a run: say why it is missing and train on.
    std::string message = error.what();
    if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) message = torch_error->what_without_backtrace();
    phase("t-SNE snapshot skipped: " + message);
  }
}

}  // namespace xmc
