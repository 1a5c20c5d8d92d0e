#pragma once
// Pick-some-labels batches (DESIGN.md section 3), plain data: the config's `psl.*` keys (psl_options.cpp) are
// bound to these fields. The methods that train on such batches (UniDEC, DEPSL) register this group.
#include <cstdint>
#include <string>

namespace xmc {

struct OptionGroup;

struct PslOptions {
  std::int64_t positives = 3;          ///< β: positives sampled per query into the label pool
  std::int64_t hard_negatives = 6;     ///< η: hard negatives per query per epoch (negatives = hard)
  std::int64_t shortlist = 100;        ///< top labels by DE embedding per query (positives removed)
  std::int64_t refresh_every = 5;      ///< τ: epochs between shortlist refreshes; η·τ entries are used per window
  std::int64_t pool_size = 0;          ///< cap on the batch's label pool (0 = none); sampled positives always stay
  std::string directions = "both";     ///< both (q→l and l→q, 0.5 each) | query_to_label
  std::string de_head = "tanh_linear"; ///< DE embeddings: tanh_linear (g1 = L2norm(Tanh(Linear))) | normalize (L2norm(Φ))
};

OptionGroup psl_option_group();

}  // namespace xmc
