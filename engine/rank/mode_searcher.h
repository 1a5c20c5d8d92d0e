#pragma once
// Engine-internal (includes torch). The searcher of an inference mode (method/label_ranking.h): the one place that
// tells the kinds of modes apart.
#include <functional>
#include <memory>

#include "engine/index/index.h"
#include "engine/rank/label_searcher.h"

namespace xmc {

/// Makes the index a mode's label matrix ([L x d]) is searched through; null: exact search on the matrix in place.
using LabelIndexMaker = std::function<std::unique_ptr<Index>(const torch::Tensor& label_matrix)>;

/// `mode`'s searcher: its ranker's (it reads texts), else its label matrix's (through `index_for`'s index when that
/// gives one), mapped to the labels of its subset when it ranks one.
std::unique_ptr<LabelSearcher> make_mode_searcher(const InferenceMode& mode, const LabelIndexMaker& index_for = {});

}  // namespace xmc
