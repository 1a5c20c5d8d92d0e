#pragma once
// UniDEC's own options (plain data, no torch): the `unidec.*` keys (unidec_options.cpp). Its batches are
// pick-some-labels batches (sampler/psl_options.h), which DEPSL, UniDEC's dual encoder alone, shares.
#include <cstdint>
#include <string>

namespace xmc {

struct MethodInfo;

struct UnidecOptions {
  double lambda = 0.5;                       ///< λ: loss = λ·L_DE + (1-λ)·L_CLF
  double classifier_lr = 0.01;               ///< learning rate of the classifier table Ψ
  std::string classifier_optimizer = "adamw";  ///< Ψ's update: adamw (every row, every step) | lazy_adamw (the pooled rows)
  double bce_weight = 0;                     ///< weight of an auxiliary BCE on the classifier scores (0 = off)
  std::string classifier_init = "label_text";  ///< label_text (Ψ_l = CLF head of the label's text) | random
  double concat_weight = 0.5;                ///< w: concat inference ranks by (1-w)·de + w·clf (+ label bias)
  double concat_holdout = 0;                 ///< share of the training queries held out to choose w (0 = w as given)
  std::string clf_head = "linear";           ///< g2: linear (Linear + dropout) | none (classifiers over Φ itself)
  std::string label_bias = "none";           ///< none | learned: classifier score + b_l (a label prior)
};

/// UniDEC's and DEPSL's registrations: name, help and option groups.
MethodInfo unidec_method_info();
MethodInfo depsl_method_info();

}  // namespace xmc
