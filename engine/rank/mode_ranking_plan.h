#pragma once
// Engine-internal (includes torch). How an evaluation ranks a method's inference modes for every test query: which
// query encoders are encoded whole and which a slice of test queries at a time, which modes are ranked together, and
// by which route each mode ranks. With make_mode_searcher() the one place that tells the kinds of modes apart: the
// evaluation follows the plan and never asks what a mode is.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/method/label_ranking.h"

namespace xmc {

struct ModeRankingPlan {
  /// Query encoders whose test-query matrix is needed whole (a mode ranking a subset of the rows; retrieval
  /// augmentation's base), and those encoded a slice at a time for the modes ranked while streaming.
  std::vector<std::string> whole_encoders, streamed_encoders;
  /// Modes ranked while the test queries stream, a slice encoded once per pass for all of a pass's modes.
  struct Pass {
    std::vector<std::size_t> modes;
    /// Its modes rank the candidates the indexes of some of them propose (InferenceMode::candidates_from).
    bool shared_candidates = false;
  };
  std::vector<Pass> streamed_passes;
  std::vector<std::size_t> by_searcher;       ///< modes that rank by themselves (they read the texts): through their searcher
  std::vector<std::size_t> on_whole_queries;  ///< label-matrix modes whose encoder is encoded whole
  std::vector<std::size_t> on_row_subsets;    ///< modes ranking a subset of the test rows against a subset of the labels
  /// The mode retrieval augmentation builds on (the training space's, else the first): set when asked for and that
  /// mode scores every label by its vector.
  std::optional<std::size_t> rag_base;
};

/// The plan for `modes` (primary first). `approximate_index`: the evaluation searches through an index, which holds
/// a copy of its mode's label matrix, so streamed modes go one pass each (or one pass per shared candidate list).
/// Throws Error for a mode that ranks by itself yet names a subset, or candidates from a mode not ranked with it.
ModeRankingPlan plan_mode_ranking(const std::vector<InferenceMode>& modes, bool approximate_index, bool with_rag);

}  // namespace xmc
