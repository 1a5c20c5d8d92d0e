#include "engine/rank/mode_ranking_plan.h"

#include <algorithm>

#include "engine/core/error.h"

namespace xmc {
namespace {

bool ranks_by_itself(const InferenceMode& mode) { return static_cast<bool>(mode.ranker); }
bool ranks_every_row_by_vectors(const InferenceMode& mode) { return !mode.ranker && !mode.subset; }

bool contains(const std::vector<std::string>& list, const std::string& name) { return std::find(list.begin(), list.end(), name) != list.end(); }
void add_once(std::vector<std::string>& list, const std::string& name) {
  if (!contains(list, name)) list.push_back(name);
}

/// Streamed modes are ranked together, each slice encoded once for all; through an approximate index one mode at a
/// time instead, each slice encoded again for each: an index holds its own copy of its mode's label matrix (at 1.3M
/// labels UniDEC's three would be 5.3 GB at once), and encoding is cheap beside ranking. Modes that take their
/// candidates from the same modes' indexes are one pass: their indexes' copies are those modes' only (UniDEC's de and
/// clf blocks: 2.7 GB, as concat's own index alone).
std::vector<ModeRankingPlan::Pass> streamed_passes(const std::vector<InferenceMode>& modes, const std::vector<std::size_t>& streamed,
                                                   bool approximate_index) {
  std::vector<ModeRankingPlan::Pass> passes;
  if (!approximate_index) {
    if (!streamed.empty()) passes.push_back({streamed});
    return passes;
  }
  for (const std::size_t m : streamed) {
    const std::vector<std::string>& from = modes[m].candidates_from;
    const auto same = std::find_if(passes.begin(), passes.end(), [&](const ModeRankingPlan::Pass& p) { return p.shared_candidates && modes[p.modes.front()].candidates_from == from; });
    if (from.empty()) passes.push_back({{m}});
    else if (same == passes.end()) passes.push_back({{m}, true});
    else same->modes.push_back(m);
  }
  for (const ModeRankingPlan::Pass& pass : passes) {
    if (!pass.shared_candidates) continue;
    const InferenceMode& first = modes[pass.modes.front()];
    for (const std::string& name : first.candidates_from)
      if (std::none_of(pass.modes.begin(), pass.modes.end(), [&](std::size_t m) { return modes[m].name == name; }))
        throw Error("evaluation: mode \"" + first.name + "\" takes candidates from \"" + name + "\", which is not a mode ranked with it");
  }
  return passes;
}

}  // namespace

ModeRankingPlan plan_mode_ranking(const std::vector<InferenceMode>& modes, bool approximate_index, bool with_rag) {
  ModeRankingPlan plan;
  if (with_rag && !modes.empty()) {
    auto base = std::find_if(modes.begin(), modes.end(), [](const InferenceMode& mode) { return mode.training_space; });
    if (base == modes.end()) base = modes.begin();
    if (ranks_every_row_by_vectors(*base)) plan.rag_base = static_cast<std::size_t>(base - modes.begin());
  }
  // Encoders whose whole matrix is needed are encoded whole first; the others stream (at 970k test queries UniDEC's
  // three embeddings would be 4 GB at once).
  for (const InferenceMode& mode : modes)
    if (!ranks_by_itself(mode) && mode.subset) add_once(plan.whole_encoders, mode.query_encoder);
  if (plan.rag_base) add_once(plan.whole_encoders, modes[*plan.rag_base].query_encoder);
  std::vector<std::size_t> streamed;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const InferenceMode& mode = modes[m];
    if (ranks_by_itself(mode)) {
      if (mode.subset) throw Error("evaluation: mode \"" + mode.name + "\" ranks by itself and cannot rank a subset");
      plan.by_searcher.push_back(m);
    } else if (mode.subset) {
      plan.on_row_subsets.push_back(m);
    } else if (contains(plan.whole_encoders, mode.query_encoder) && !(approximate_index && !mode.candidates_from.empty())) {
      // (A mode proposing or taking shared candidates ranks in their pass even so: UniDEC's de, retrieval
      // augmentation's base, proposes concat's candidates.)
      plan.on_whole_queries.push_back(m);
    } else {
      add_once(plan.streamed_encoders, mode.query_encoder);
      streamed.push_back(m);
    }
  }
  plan.streamed_passes = streamed_passes(modes, streamed, approximate_index);
  return plan;
}

}  // namespace xmc
