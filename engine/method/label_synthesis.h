#pragma once
// Engine-internal (includes torch). An optional capability: a method built on another run that makes
// classifiers for labels the base run never saw (IRENE). Method::label_synthesis() gives it, or null.
#include <torch/torch.h>

#include "engine/text/tokenized_corpus.h"

namespace xmc {

class LabelSynthesis {
 public:
  virtual ~LabelSynthesis() = default;

  /// Classifiers for new labels, from their texts, in the base run's classifier space (what the base run's
  /// LabelRanking::new_label_vectors_with_classifiers takes), [texts x d].
  virtual torch::Tensor synthesized_classifiers(const TokenizedCorpus& texts) = 0;
};

}  // namespace xmc
