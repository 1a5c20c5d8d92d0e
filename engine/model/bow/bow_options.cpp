#include "engine/model/bow/bow_options.h"

#include "engine/config/component_info.h"
#include "engine/config/option_group_builder.h"

namespace xmc {

EncoderInfo bow_encoder_info() {
  return {"bow", "bag of words: TF-IDF-weighted word vectors and a residual block (fast on a CPU)",
          {OptionGroupBuilder<BowOptions>("Bag-of-words encoder")
      .integer("encoder.min_count", &BowOptions::min_count, 1, std::numeric_limits<std::int64_t>::max(),
               "bow: drop words seen fewer times in training text")
      .text("encoder.bag", &BowOptions::bag, {"mean", "l2", "uniform"},
            "bow: TF-IDF weights summing to 1 (a weighted mean), or with unit L2 norm "
            "(a text keeps one word vector's scale whatever its length, as L2-normalised TF-IDF), or uniform (the plain mean "
            "of its words' vectors, every occurrence alike, as an EmbeddingBag in mean mode)")
      .text("encoder.block", &BowOptions::block, {"residual", "relu", "none"},
            "bow: after the bag a residual block h + W2·GELU(W1·h) starting as the identity (W2 = 0), or relu: h + ReLU(W·h) "
            "with W as torch initialises it (the reference script's), or none (a linear encoder)")
      .number("encoder.init_std", &BowOptions::init_std, 1e-6, 100,
              "bow: standard deviation of the word vectors at the start (Adam moves them ~lr per "
              "step whatever their scale, so a smaller start learns them faster)")
      .build()}};
}

}  // namespace xmc
