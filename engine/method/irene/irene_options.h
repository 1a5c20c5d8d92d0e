#pragma once
// IRENE's own options (plain data, no torch): the `irene.*` keys (irene_options.cpp). IRENE synthesizes
// classifiers for novel labels on a finished run of a method with classifiers, in the same store.
#include <cstdint>
#include <string>

namespace xmc {

struct MethodInfo;

struct IreneOptions {
  std::int64_t base_run = 0;               ///< the run whose encoder and classifiers IRENE builds on
  std::string generator = "transformer";   ///< transformer | weighted_sum (training-free)
  std::int64_t neighbours = 3;             ///< K nearest observed labels by embedding (never the label itself)
  double temperature = 0.1;                ///< T of the neighbours' softmax weights
  double positive_weight = 10;             ///< C: weight of positives in the generator's BCE
  std::int64_t heads = 0;                  ///< attention heads of the generator's transformer layer (0 = the most of 4, 2, 1 dividing its size)
  double selection_margin = 2;             ///< a trained generator replaces the kept one only when ahead by this many standard errors
  std::string calibration = "mean_query";  ///< mean_query | none: offsets of synthesized classifiers' scores
};

/// IRENE's registration: name, help and option group.
MethodInfo irene_method_info();

}  // namespace xmc
