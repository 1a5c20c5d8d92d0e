#pragma once
// Engine-internal (includes torch). The "t-SNE of negatives" view of one training query (as in the NGAME
// paper's figure): a 2-D exact t-SNE of the query's embedding together with the label embeddings of
//   query        the query itself (label -1)
//   positive     its true labels
//   ann_hard     its top-H labels by embedding similarity (positives excluded) that its batch did give it
//                as in-batch negatives
//   missed_hard  those top-H hard negatives its batch did not give it
//   in_batch     the other in-batch negatives (its batch's label pool, minus positives and the above)
//   random       R uniformly random labels from none of the above (nor from the batch's pool)
// Each label is in exactly one group, taken in this order of precedence. The result is JSON text (the
// payload of RunStore::add_tsne_snapshot and of TrainEvent::Kind::Snapshot):
//   {"query": 123, "query_text": "...", "epoch": 3.0, "step": 456, "batch_queries": 256,
//    "num_labels": 8283, "counts": {"query": 1, "positive": 4, ...},
//    "tsne": {"perplexity": 30, "iterations": 500, "seed": 7},
//    "points": [{"x": 1.2, "y": -0.3, "group": "query", "label": -1, "text": "<query text>"},
//               {"x": .., "y": .., "group": "positive", "label": 17, "text": "<label text>"}, ...]}
// Points come group by group in the order above (the query first); within a group, positives by label
// id, hard negatives by similarity (most similar first), in-batch negatives in pool order, random ones
// in the order drawn. Texts are cut to at most 200 bytes (on a UTF-8 boundary, with "…").
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <functional>
#include <vector>

#include "engine/analysis/tsne.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

/// The group names, in order of precedence.
inline constexpr const char* kSnapshotGroups[] = {"query", "positive", "ann_hard", "missed_hard", "in_batch", "random"};

struct NegativesSnapshotOptions {
  std::int64_t hard = 50;             ///< H: ANN hard negatives looked at (top-H by similarity)
  std::int64_t random = 100;          ///< R: uniformly random labels
  std::int64_t max_in_batch = 300;    ///< at most this many in_batch points (a seeded uniform subset)
  std::int64_t max_positives = 100;   ///< at most this many positive points (the lowest label ids)
  std::uint64_t seed = 1;             ///< seeds the random labels and the in_batch subset
  TsneOptions tsne;                   ///< the 2-D map (its own seed)
  /// Hard limit of the exact t-SNE: 1 + max_positives + hard + max_in_batch + random must not exceed it.
  static constexpr std::int64_t kMaxPoints = 2000;
};

struct NegativesSnapshotInput {
  std::int64_t query = -1;                 ///< training row
  std::string query_text;
  double epoch = 0;
  std::int64_t step = 0;
  torch::Tensor query_embedding;           ///< [d] or [1, d]: the query's DE embedding
  torch::Tensor label_embeddings;          ///< [L, d]: every label's DE embedding (same device)
  std::vector<std::int64_t> positives;     ///< the query's true labels
  std::vector<std::int64_t> in_batch_pool; ///< labels its batch gave it as negatives (own positives ignored)
  std::int64_t batch_queries = 0;          ///< queries in its batch (0 = batch unknown), reported as is
  const std::vector<std::string>* label_text = nullptr;  ///< L label texts; null = "label N"
};

/// Builds the snapshot (groups, t-SNE, JSON). Throws xmc::Error on inconsistent inputs (embedding shapes,
/// label ids outside [0, L), caps above kMaxPoints). `forming`, when given, gets the same JSON for the map as the
/// t-SNE converges (every options.tsne.layout_every of its iterations), for a view that draws it as it forms.
std::string negatives_snapshot_json(const NegativesSnapshotInput& input, const NegativesSnapshotOptions& options = {},
                                    const std::function<void(const std::string& json)>& forming = {});

/// The in-batch negatives a query's batch gives it: the positives of the other queries of the batch in
/// `batches` that holds `query` (unique, in order of appearance, the query's own positives left out).
struct QueryBatchPool {
  std::int64_t batch_queries = 0;    ///< size of the query's batch; 0 when no batch holds it
  std::vector<std::int64_t> labels;
};
QueryBatchPool in_batch_negatives(const CsrMatrix& train_labels, const std::vector<std::vector<std::int64_t>>& batches,
                                  std::int64_t query);

}  // namespace xmc
