#include "engine/sampler/negatives_options.h"

#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "engine/config/option_group_builder.h"
#include "engine/core/error.h"
#include "engine/index/index_keys.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/core/cpu_features.h"

namespace xmc {

OptionGroup negatives_option_group(const std::vector<NegativesKind>& kinds) {
  std::vector<std::string> names;
  std::string help = "Negatives besides each query's positives:";
  for (const NegativesKind& kind : kinds) {
    names.push_back(kind.name);
    help += (names.size() == 1 ? " " : "; ") + kind.name + ", " + kind.description;
  }
  // The hard.* and all.* keys are read by the dual-encoder training of DEXML and NGAME; the pick-some-labels
  // methods keep shortlists of their own (psl.*).
  const std::string dual_encoder_methods = "method=dexml|ngame";
  return OptionGroupBuilder<NegativesOptions>("Negatives")
      .text("negatives", &NegativesOptions::kind, names, help)
      .when("negatives=hard;" + dual_encoder_methods)
      .integer("hard.per_query", &NegativesOptions::hard_per_query, 1, 10000, "Hard negatives sampled per query from its shortlist")
      .when("negatives=hard;" + dual_encoder_methods)
      .integer("hard.shortlist", &NegativesOptions::shortlist, 1, 100000, "Shortlist size: exact top-k labels per query, positives removed")
      .when("negatives=hard;" + dual_encoder_methods)
      .integer("hard.refresh_every", &NegativesOptions::refresh_every, 1, std::numeric_limits<std::int64_t>::max(),
               "Epochs between shortlist refreshes")
      .when("negatives=hard")
      .integer("hard.start_epoch", &NegativesOptions::start_epoch, 0, std::numeric_limits<std::int64_t>::max(),
               "First epoch (0-based) with hard negatives (hard.* and UniDEC's psl.*): the first shortlists are searched at its "
               "start, by embeddings that have trained; earlier epochs train on in-batch negatives alone (UniDEC, DEPSL: the "
               "batch's sampled positives). Untrained embeddings rank labels by chance, and an approximate search of them keeps "
               "little of their exact top 10 (0.30 at 1.3M labels, bench/RESULTS.md)")
      .when("negatives=hard")
      .text("hard.search", &NegativesOptions::search, {},
            "How hard-negative shortlists (hard.* and UniDEC's psl.*) are found, in eval.index's words: exact top-k; "
            "ivf[:probe=N,size=N], an inverted file of label clusters (spherical k-means, size labels each, hard.cluster_size "
            "when not given; each query searches probe of them, hard.probe when not given, then tuned: hard.max_probe); "
            "hnsw[:M=N,ef=N,efc=N], an HNSW graph over the labels (M 16, efc 100, ef twice the labels asked for when not given); "
            "or auto: ivf from hard.search_above labels, exact below. Approximate shortlists log their "
            "recall against exact on 1,000 sampled queries at every refresh (bench/RESULTS.md: at 1.3M labels HNSW was no "
            "faster than exact on 2 cores)")
      .when("negatives=hard")
      .integer("hard.search_above", &NegativesOptions::search_above, 1, std::numeric_limits<std::int64_t>::max(),
               "With hard.search = auto: the label count from which shortlists are approximate (exact search costs queries x labels)")
      .when("negatives=hard")
      .integer("hard.cluster_size", &NegativesOptions::cluster_size, 0, 1 << 24,
               "With ivf shortlists: labels per cluster of the inverted file; 0: about sqrt(labels) / 4 (at least 64), i.e. four "
               "times sqrt(labels) clusters. Smaller clusters follow the labels' own groups more closely: at 1.3M labels, 4,562 "
               "clusters kept 0.95 of a query's exact top 10 at 2.1 % of the labels scanned, 1,140 (sqrt(labels)) needed 16.9 %; "
               "their k-means costs more (89 s against 13 s on 2 cores, bench/RESULTS.md)")
      .when("negatives=hard")
      .integer("hard.probe", &NegativesOptions::probe, 1, 1 << 20,
               "With ivf shortlists: label clusters each query searches, the first probe tried (more: closer to exact, slower); each "
               "refresh lowers it by a third at a time while 1,000 sampled training queries keep 0.95 of their exact top 10, or "
               "raises it toward that (hard.max_probe)")
      .when("negatives=hard")
      .integer("hard.max_probe", &NegativesOptions::max_probe, 1, 1 << 20,
               "With ivf shortlists: each refresh raises the probe from hard.probe by half at a time (64, 96, 144, ...), up to "
               "this, until 1,000 sampled training queries keep 0.95 of their exact top 10 (the refresh's products grow with the "
               "probe); the log says the probe and recall reached. At 1.3M labels in 4,562 clusters: 0.94 at 64, 0.95 at 96 on "
               "trained embeddings (bench/RESULTS.md); 512 of them scan 11 % of the labels. A first probe that keeps 0.95 is lowered "
               "instead (64, 43, 29, ...) while it still does. At or below hard.probe: hard.probe as it is, neither raised nor lowered")
      .when("negatives=hard")
      .text("hard.precision", &NegativesOptions::precision, {"auto", "float32", "bfloat16"},
            "With ivf shortlists: the type the labels are held and the probed clusters scored in. bfloat16 multiplies several "
            "times faster on a CPU with AVX512-BF16 or AMX (and is emulated, slower, elsewhere) and holds the labels in half "
            "the memory; each query's best candidates are then re-scored in float32, so only the shortlist's border differs "
            "from float32 search (the logged recall, against float32 exact search, says how much). auto: bfloat16 products where "
            "the CPU has them natively; elsewhere the labels are still held in bfloat16 (0.62 instead of 1.24 GiB at 1.3M "
            "labels) and each probed cluster is scored in float32. float32: labels held and scored in float32")
      .when("negatives=all;" + dual_encoder_methods)
      .integer("all.label_chunk", &NegativesOptions::label_chunk, 1, 1 << 24, "Labels encoded per chunk when negatives = all")
      .validate([](const TrainConfig& config) { check_shortlist_search(config.get<NegativesOptions>()); })
      .build();
}

ShortlistSearchSpec check_shortlist_search(const NegativesOptions& options) {
  // The kinds of eval.index's descriptions (engine/index/index_factory.h) that shortlists are found by, with their keys.
  static const std::map<std::string, std::set<std::string>> kinds{{"auto", {}}, {"exact", {}}, {"ivf", {"probe", "size"}}, {"hnsw", {"M", "ef", "efc"}}};
  const std::string& text = options.search;
  const auto refuse = [&text](const std::string& why) {
    throw ConfigError("hard.search: \"" + text + "\" " + why + "; shortlists are found by exact, ivf[:probe=N,size=N], hnsw[:M=N,ef=N,efc=N] or auto");
  };
  const auto colon = text.find(':');
  ShortlistSearchSpec spec{.kind = text.substr(0, colon)};
  const auto kind = kinds.find(spec.kind);
  if (kind == kinds.end()) refuse(spec.kind == "faiss" ? "ranks evaluations only (eval.index)" : "is not a search description");
  if (colon != std::string::npos) {
    if (kind->second.empty()) refuse("takes no parameters");
    parse_key_values(std::string_view(text).substr(colon + 1), refuse, [&](const std::string& key, std::int64_t value) {
      if (kind->second.count(key) == 0) refuse("has the unknown " + spec.kind + " key \"" + key + "\"");
      spec.keys[key] = value;
    });
  }
  // The ivf description's parameters stand in for hard.probe and hard.cluster_size: both given is one too many.
  const NegativesOptions defaults;
  for (const auto& [key, former, value, default_value] : {std::tuple{"probe", "hard.probe", options.probe, defaults.probe},
                                                          std::tuple{"size", "hard.cluster_size", options.cluster_size, defaults.cluster_size}})
    if (spec.keys.count(key) != 0 && value != default_value)
      throw ConfigError("hard.search \"" + text + "\" gives " + key + "=" + std::to_string(spec.keys.at(key)) + " and " + former + " gives " +
                        std::to_string(value) + ": give it once");
  return spec;
}

bool NegativesOptions::bfloat16_products() const {
  return precision == "bfloat16" || (precision == "auto" && cpu_has_native_bfloat16_products());
}

bool NegativesOptions::bfloat16_labels() const { return precision == "bfloat16" || precision == "auto"; }

}  // namespace xmc
