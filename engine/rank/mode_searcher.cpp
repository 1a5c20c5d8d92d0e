#include "engine/rank/mode_searcher.h"

#include "engine/rank/subset_searcher.h"
#include "engine/rank/text_ranker_searcher.h"
#include "engine/rank/vector_searcher.h"

namespace xmc {

std::unique_ptr<LabelSearcher> make_mode_searcher(const InferenceMode& mode, const LabelIndexMaker& index_for) {
  if (mode.ranker) return std::make_unique<TextRankerSearcher>(mode.ranker);
  std::unique_ptr<LabelSearcher> vectors =
      std::make_unique<VectorSearcher>(mode.query_encoder, mode.label_matrix, index_for ? index_for(mode.label_matrix) : nullptr);
  if (mode.subset) return std::make_unique<SubsetSearcher>(std::move(vectors), mode.subset->label_ids);
  return vectors;
}

}  // namespace xmc
