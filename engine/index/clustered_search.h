#pragma once
// Engine-internal (includes torch). Approximate inner-product top-k through an inverted file: the keys are
// grouped by spherical k-means (spherical_kmeans.h) into about √m clusters; a query is scored against the
// clusters' centroids and only the keys of its `probe` best clusters are searched. It is the shortlist search for label counts where exact search costs
// too much (queries × labels products: hours at 1.3M labels and 2M queries on 2 cores), and unlike a graph
// index it spends its time in matrix products: each cluster's keys are one contiguous block, multiplied at
// once by all the queries of a chunk that probe it.
//
// With probe ≥ the number of clusters every key is scored and the result is the exact top-k (ties aside).
// Ties: equal scores come out in the keys' cluster order, not by lower key id as in exact_top_k.
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/progress.h"
#include "engine/index/exact_search.h"

namespace xmc {

struct ClusteredSearchOptions {
  std::int64_t cluster_size = 0;   ///< keys per cluster on average: ⌈m / cluster_size⌉ clusters; 0 = ⌈√m⌉ (at least 64)
  std::int64_t probe = 64;         ///< clusters searched per query (clamped to the number of clusters)
  std::int64_t scores_bytes = 0;   ///< memory for one chunk of queries' selection state (a top-k selector a query and thread):
                                   ///< sets how many queries are searched at once; 0 = the memory budget's share (128 MB at 512 MB)
  std::uint64_t seed = 0;          ///< the k-means' seed
  /// Score the probed clusters in bfloat16 (where the CPU multiplies it natively, several times faster than float32),
  /// then re-score each query's best k + max(16, k/4) candidates in float32 and keep the best k of those: what is
  /// returned is ordered by exact float32 scores (of the bfloat16 keys, when they are held so); only which
  /// candidates reach the re-scoring can differ.
  bool bfloat16_products = false;
  ExcludeLists exclude;            ///< optional: key ids never returned, per query row
  Progress* progress = nullptr;    ///< optional: told the query rows done after each chunk, as units of a task the caller started
};

/// What a search looked at.
struct ClusteredSearchStats {
  std::int64_t clusters = 0;       ///< clusters the keys were grouped into (some may be empty)
  std::int64_t probed = 0;         ///< clusters searched per query
  double scanned_fraction = 0;     ///< mean share of the keys a query was scored against
  double clustering_seconds = 0;   ///< the k-means of the keys (the rest is the search)
};

/// Keys grouped into clusters once, then searched any number of times (an index's state; copies share it).
class KeyClusters {
 public:
  /// Groups `keys` ([m, d] floating, CPU) by spherical k-means into ⌈m / cluster_size⌉ clusters (0 = ⌈√m⌉
  /// keys a cluster, at least 64). The keys are copied: in bfloat16 when they are bfloat16 (half the memory; then
  /// every score is of the rounded keys, and exact() is the exact top-k of the rounded keys), float32 otherwise.
  explicit KeyClusters(const torch::Tensor& keys, std::int64_t cluster_size = 0, std::uint64_t seed = 0);
  /// The same, taking the keys over: when nothing else holds their storage (the caller moved its only handle in)
  /// and they are contiguous float32 or bfloat16, they are regrouped in place instead of copied (1.3 GB at 1.3M
  /// keys x 256 in float32).
  explicit KeyClusters(torch::Tensor&& keys, std::int64_t cluster_size = 0, std::uint64_t seed = 0);
  /// The same over keys left where they lie, in id order (nothing copied: a column block of a larger matrix costs no
  /// memory): `keys` must be float32 on the CPU with unit column stride, and must not change while these clusters are
  /// searched (the handle is held, so their storage stays alive). Each cluster's rows are gathered for its product,
  /// which costs a copy of the cluster per chunk of queries beside a product over all the chunk's queries that probe it.
  static KeyClusters borrowing(const torch::Tensor& keys, std::int64_t cluster_size = 0, std::uint64_t seed = 0);
  /// The approximate top-k of the queries over the keys (as clustered_top_k; options.cluster_size and seed are
  /// the constructor's business). Safe to call from several threads at once.
  TopK search(const torch::Tensor& queries, std::int64_t k, const ClusteredSearchOptions& options = {}, ClusteredSearchStats* stats = nullptr) const;
  /// The exact top-k over the same keys (exact_top_k's result, ids as given; exclusion lists by key id), for
  /// measuring the search's recall without a second copy of the keys.
  TopK exact(const torch::Tensor& queries, std::int64_t k, const ExcludeLists& exclude = {}) const;
  std::int64_t clusters() const;
  std::int64_t size() const;
  double clustering_seconds() const;
  /// Where the grouped keys lie (the moved-in keys' own memory when they were regrouped in place); nullptr for
  /// borrowed keys, which stay in id order.
  const void* grouped_keys() const;
  /// The keys are held in bfloat16 (they were given so).
  bool keys_in_bfloat16() const;
  /// Position in the grouped keys -> key id, and key id -> position.
  const std::vector<std::int64_t>& key_at() const;
  const std::vector<std::int64_t>& position_of() const;

  struct Groups;

 private:
  enum class Placement { kCopied, kRegroupedInPlace, kBorrowed };
  KeyClusters() = default;
  void build(const torch::Tensor& keys, std::int64_t cluster_size, std::uint64_t seed, Placement placement);
  std::shared_ptr<const Groups> groups_;
};

/// The approximate top-k of <queries[i], keys[j]> (see the header comment): KeyClusters(keys).search(queries).
/// @param queries [n, d] floating tensor on the CPU
/// @param keys    [m, d] floating tensor on the CPU, m < 2^31
/// @param k       results per query, clamped to m
/// @return scores and ids as exact_top_k returns them: [n, k], best first, -inf / -1 where a query's probed
///         clusters held fewer than k keys that are not excluded
TopK clustered_top_k(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k, const ClusteredSearchOptions& options = {},
                     ClusteredSearchStats* stats = nullptr);

}  // namespace xmc
