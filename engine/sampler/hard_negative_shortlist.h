#pragma once
// Engine-internal (includes torch). Each training query's hard-negative shortlist: the top-S labels by embedding
// similarity with the query's own positives removed (DEXML/UniDEC hard negatives). Exact top-S costs queries ×
// labels inner products, hours at LF-AmazonTitles-1.3M's size on a CPU; above a label count (or when asked) the
// shortlists come from an approximate search instead: an inverted file of balanced label clusters
// (clustered_search.h) or an HNSW graph over the labels. Their recall against the exact ones is measured on a
// sample of the queries and reported, so a run's log says how approximate its negatives were.
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

#include "engine/core/progress.h"
#include "engine/sampler/negatives_options.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

struct ShortlistSearch {
  std::string kind = "exact";  ///< exact | ivf | hnsw | auto
  std::int64_t ann_above = 200000;  ///< with auto: ivf from this many labels
  /// With ivf: labels per cluster; 0 = about √labels / 4 (at least 64). Four times √labels clusters keep a query's top 10
  /// at a fifth of the labels scanned that √labels clusters need (bench/RESULTS.md: 2.1 % against 16.9 % at 1.3M labels).
  std::int64_t cluster_size = 0;
  std::int64_t probe = 64;          ///< with ivf: label clusters searched per query
  /// With ivf: the probe is lowered from `probe` by a third at a time while the sampled queries keep `recall_target`
  /// of their exact top 10 (when `probe` already does), or else raised by half at a time, up to this, until they keep
  /// `recall_target` of their exact top 10 (0 or <= probe: `probe` as it is).
  std::int64_t max_probe = 0;
  double recall_target = 0.95;
  bool bfloat16_products = false;   ///< with ivf: labels held and scored in bfloat16, candidates re-scored in float32
  /// With ivf: labels held in bfloat16 (half the memory of float32: 0.62 GiB at 1.3M x 256), each probed cluster's
  /// rounded labels scored in float32; implied by bfloat16_products.
  bool bfloat16_labels = false;
  std::int64_t recall_sample = 1000;  ///< queries the approximate shortlists are checked on against exact ones
  /// With hnsw: the graph's links per node, candidate list while building, and while searching (0: twice the labels
  /// asked for, at least 64).
  std::int64_t hnsw_links = 16;
  std::int64_t hnsw_build_candidates = 100;
  std::int64_t hnsw_search_candidates = 0;

  /// With ivf: whether the labels are held in bfloat16 (asked for, or implied by bfloat16 products).
  bool holds_labels_in_bfloat16() const { return bfloat16_products || bfloat16_labels; }
};

/// The search the hard.* options describe (hard.search's description, its parameters standing in for hard.probe and
/// hard.cluster_size). Throws ConfigError as check_shortlist_search() does.
ShortlistSearch shortlist_search(const NegativesOptions& options);

/// With ivf: the labels per cluster `search` asks for over `num_labels` labels (search.cluster_size, or its default).
std::int64_t ivf_labels_per_cluster(const ShortlistSearch& search, std::int64_t num_labels);

/// How a shortlist was found.
struct ShortlistReport {
  bool approximate = false;
  std::string how;              ///< "exact", "ivf" or "hnsw"
  std::int64_t clusters = 0;    ///< with ivf: label clusters, and how many each query searched
  std::int64_t probed = 0;
  std::int64_t first_probe = 0; ///< with ivf: the probe tried first (probed > first_probe: raised toward recall_target;
                                ///< probed < first_probe: lowered, keeping it)
  double recall_target = 0;     ///< with ivf and a tuned probe: the recall@10 it was tuned toward
  bool bfloat16 = false;        ///< with ivf: labels held and scored in bfloat16, re-scored in float32
  bool bfloat16_labels = false; ///< with ivf: labels held in bfloat16 (scored in float32 unless `bfloat16`)
  double scanned_fraction = 1;  ///< with ivf: mean share of the labels a query was scored against
  double recall = 1.0;          ///< mean over the sampled queries of |approximate ∩ exact| / |exact|
  double recall_at_10 = 1.0;    ///< the same for the top 10 of both
  std::int64_t sampled = 0;     ///< queries the recall was measured on
  /// One line for the run's log, for an approximate search: "hard-negative shortlists: IVF over L labels (2048
  /// clusters, 64 searched: 3.1 % of the labels a query), recall@S 0.97 (recall@10 0.99) against exact on 1000 sampled queries".
  std::string describe(std::int64_t labels, std::int64_t size) const;
};

/// Rows (the queries a shortlist is searched for, or the labels) embedded a slice at a time: a refresh holds one
/// slice of query embeddings (the memory budget's share), not all N of them (2.3 GB at 2.25M queries x 256).
struct RowEmbeddings {
  std::int64_t count = 0;
  /// [end - begin x d] embeddings of rows [begin, end), on any device
  std::function<torch::Tensor(std::int64_t begin, std::int64_t end)> embed;
  /// The rows of embeddings already made ([N x d], row r = training row r).
  static RowEmbeddings of(const torch::Tensor& embeddings);
};

/// @param queries  the N training queries (row r = training row r)
/// @param labels   [L x d] label embeddings. An IVF search takes them over: handed in with std::move (the only
///                 handle), they are regrouped in place rather than copied (1.3 GB at 1.3M labels x 256 in float32).
///                 With search.bfloat16_products an IVF search keeps them in bfloat16 (half that) and scores the
///                 rounded labels; the sampled recall is still measured against the float32 labels' exact shortlists.
/// @param positives train label matrix (N rows)
/// @param progress told the rows done, as task "hard-negative shortlists (exact top-S)", "(IVF top-S)" or "(HNSW top-S)"
/// @param report   when given, filled with how the shortlist was found
/// @return [N x S] int32 CPU tensor of label ids, best first; -1 where fewer than S negatives exist (or, when
///         approximate, were found). int32: half the memory of int64 ids (0.9 GB at 2.25M queries x 100).
torch::Tensor hard_negative_shortlist(const RowEmbeddings& queries, torch::Tensor labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress = silent_progress(), const ShortlistSearch& search = {},
                                      ShortlistReport* report = nullptr);
/// The same with the labels embedded a slice at a time (told to `progress` as task "hard-negative index: encoding
/// labels"): an IVF search in bfloat16 never holds them in float32, the other searches gather them in float32.
torch::Tensor hard_negative_shortlist(const RowEmbeddings& queries, const RowEmbeddings& labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress = silent_progress(), const ShortlistSearch& search = {},
                                      ShortlistReport* report = nullptr);
/// The same for embeddings already made.
torch::Tensor hard_negative_shortlist(const torch::Tensor& queries, torch::Tensor labels, const CsrMatrix& positives,
                                      std::int64_t size, Progress& progress = silent_progress(), const ShortlistSearch& search = {},
                                      ShortlistReport* report = nullptr);

}  // namespace xmc
