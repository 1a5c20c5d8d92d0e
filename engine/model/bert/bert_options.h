#pragma once
// The bert encoder's own keys (plain data, no torch), beside the transformer keys it shares with the decoder.
#include <string>

namespace xmc {

struct OptionGroup;

struct BertOptions {
  /// Whether a batch's real tokens run through the projections, MLPs and norms packed, without its padding:
  /// auto (on a CPU, when at least a tenth of the padded positions are padding), on, off (always padded).
  std::string packing = "auto";
};

OptionGroup bert_option_group();

}  // namespace xmc
