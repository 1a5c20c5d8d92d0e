#pragma once
// Per-label quality of a trained run on its test set (the workbench's Labels tab): how often each label
// is found in the top-k of the test queries it belongs to, against how often it occurs in training.
// Plain data; Session::label_quality computes it.
#include <cstdint>
#include <string>
#include <vector>

namespace xmc {

struct LabelQuality {
  std::int64_t label = 0;
  std::string text;
  std::int64_t train_count = 0;    ///< training queries with the label
  std::int64_t test_count = 0;     ///< test queries with the label
  std::int64_t hits = 0;           ///< of those, how many rank it within the top k
  std::int64_t predicted = 0;      ///< test queries that rank it within the top k (rightly or not)
  std::vector<std::int64_t> missed_queries;  ///< up to 5 test rows with the label that miss it

  double recall() const { return test_count > 0 ? static_cast<double>(hits) / static_cast<double>(test_count) : 0.0; }
  double precision() const { return predicted > 0 ? static_cast<double>(hits) / static_cast<double>(predicted) : 0.0; }
};

struct LabelQualityReport {
  std::int64_t k = 5;
  std::string mode;                    ///< the inference mode ranked
  std::vector<std::string> modes;      ///< every inference mode the run has (the first is its primary)
  std::int64_t test_queries = 0;
  std::vector<LabelQuality> labels;    ///< every dataset label, by id
  std::vector<std::string> test_texts; ///< the test queries, for the examples of missed_queries
};

}  // namespace xmc
