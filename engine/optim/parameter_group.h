#pragma once
// Engine-internal (includes torch). Parameters a method asks to be optimised together.
#include <torch/torch.h>

#include <vector>

namespace xmc {

/// Parameters optimised together at one learning rate and weight decay.
struct ParameterGroup {
  std::vector<torch::Tensor> parameters;
  double lr = 0;
  double weight_decay = 0;
  /// Rows a step gives no gradient keep their value and moments (FusedAdamW::update_rows_lazily): for tables
  /// of which a step touches a few rows, such as a classifier per label.
  bool lazy_rows = false;
};

}  // namespace xmc
