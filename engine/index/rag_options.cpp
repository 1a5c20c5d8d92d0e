#include "engine/index/rag_options.h"

#include "engine/config/option_group_builder.h"

namespace xmc {

OptionGroup rag_option_group() {
  return OptionGroupBuilder<RagOptions>("Retrieval-augmented inference")
      .text("rag.use", &RagOptions::use, {"off", "on"},
            "on: also rank by the labels and the training queries nearest a query (mode rag: each neighbour votes for its labels)")
      .when("rag.use=on")
      .integer("rag.top", &RagOptions::top, 1, 100000, "Labels, and training queries, retrieved per query")
      .when("rag.use=on")
      .number("rag.lambda", &RagOptions::lambda, 0, 1, "λ: weight of the labels' part; 1 − λ goes to the neighbours' labels")
      .when("rag.use=on")
      .text("rag.lambda_from", &RagOptions::lambda_from, {"config", "held-out"},
            "held-out: each evaluation chooses λ among 0, 0.1, ..., 1 on the training queries the method held out (unidec.concat_holdout, "
            "holdout.share), ranked against the other training queries, by P@1 + P@3 + P@5; rag.lambda stays unless another beats it by "
            "more than a standard error. The log shows every λ's score, and the run its choice beside rag.lambda")
      .when("rag.use=on")
      .number("rag.temperature", &RagOptions::temperature, 1e-6, 100, "Temperature of the softmax over the joint list")
      .build();
}

}  // namespace xmc
