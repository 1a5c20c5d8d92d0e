#pragma once
// Retrieval-augmented inference (ViXML, appendix E), an inference mode `rag` of any dense method (plain data,
// no torch): `rag.use`, `rag.top`, `rag.lambda`, `rag.lambda_from`, `rag.temperature` (rag_options.cpp).
#include <cstdint>
#include <string>

namespace xmc {

struct OptionGroup;

struct RagOptions {
  std::string use = "off";     ///< on: evaluate (and serve) the `rag` mode beside the method's own
  std::int64_t top = 100;      ///< labels and training queries retrieved per query
  double lambda = 0.9;         ///< weight of the labels' part; 1 − λ for the training queries' labels
  std::string lambda_from = "config";  ///< held-out: λ chosen at each evaluation on the training queries the method held out
  double temperature = 0.05;   ///< of the softmax over the joint list of scores
};

OptionGroup rag_option_group();

}  // namespace xmc
