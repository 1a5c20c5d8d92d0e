#pragma once
// Which labels a training step scores besides each query's positives (plain data, no torch): the config keys
// `negatives`, `hard.*` and `all.*` (negatives_options.cpp) are bound to these fields.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace xmc {

struct OptionGroup;
struct NegativesKind;

struct NegativesOptions {
  std::string kind = "inbatch";            ///< the config's `negatives`: inbatch | hard | all
  std::int64_t hard_per_query = 2;         ///< hard negatives sampled per query from its shortlist
  std::int64_t shortlist = 100;            ///< size of each query's hard-negative shortlist
  std::int64_t refresh_every = 2;          ///< epochs between shortlist refreshes
  std::int64_t start_epoch = 0;            ///< first epoch with hard negatives, whose start searches the first shortlists
  std::int64_t label_chunk = 4096;         ///< labels encoded per chunk with negatives = all (gradient caching)
  std::string search = "auto";             ///< how shortlists are found: an index description of eval.index's (exact, ivf[:probe=N,size=N],
                                           ///< hnsw[:M=N,ef=N,efc=N]) or auto (ivf from search_above labels)
  std::int64_t search_above = 200000;      ///< with search = auto, the label count from which shortlists are approximate
  std::int64_t cluster_size = 0;           ///< with ivf: labels per cluster; 0 = about sqrt(labels) / 4 (at least 64)
  std::int64_t probe = 64;                 ///< with ivf: label clusters searched per query (the first tried)
  std::int64_t max_probe = 512;            ///< with ivf: the probe is raised by half at a time up to this, toward 0.95 of the exact top 10
                                           ///< (or lowered by a third while it keeps that); <= probe: no tuning
  std::string precision = "auto";          ///< with ivf: the labels' and products' type: float32 | bfloat16 | auto (bfloat16 where native)

  /// Whether an ivf shortlist search holds its labels and scores in bfloat16 (then re-scores its candidates in float32).
  bool bfloat16_products() const;
  /// Whether an ivf shortlist search holds its labels in bfloat16 (auto and bfloat16; scored in float32 unless
  /// bfloat16_products()).
  bool bfloat16_labels() const;
};

/// hard.search taken apart: "auto", or the kind of index description it gives (exact, ivf, hnsw) and its KEY=N
/// parameters.
struct ShortlistSearchSpec {
  std::string kind = "auto";
  std::map<std::string, std::int64_t> keys;
};
/// hard.search checked and taken apart; throws ConfigError naming it when it is not a description shortlists take, or
/// when its ivf parameters say again what hard.probe or hard.cluster_size say.
ShortlistSearchSpec check_shortlist_search(const NegativesOptions& options);

/// The group of `negatives` (one of `kinds`), hard.* and all.*.
OptionGroup negatives_option_group(const std::vector<NegativesKind>& kinds);

}  // namespace xmc
