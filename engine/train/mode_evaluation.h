#pragma once
// Engine-internal (includes torch). Evaluation of every inference mode a method has now: test queries
// are encoded once per query encoder, each mode's label matrix is ranked exactly (filter pairs removed)
// and scored with the metrics of engine/eval. The trainer and `xmc eval`-style checks both use it.
#include <vector>

#include "engine/method/method.h"
#include "engine/train/evaluation_pass.h"

namespace xmc {

struct ModeEvaluation {
  std::vector<InferenceMode> modes;  ///< the method's modes, primary first
  std::vector<EvalResult> results;   ///< one per mode
};

ModeEvaluation evaluate_modes(Method& method, const TokenizedCorpus& test_queries, const TokenizedCorpus& labels, const EvaluationSetup& setup,
                              Progress& progress = silent_progress());

}  // namespace xmc
