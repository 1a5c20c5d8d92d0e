#pragma once
// The name of a stored metric as a value: which inference mode, which family, which k. Stored names are
// "P@5" for a run's primary mode and "<mode>/P@5" for its other modes ("emb/P@5", "clf/nDCG@3"); this is
// the one place that reads or writes that form.
#include <string>
#include <string_view>

namespace xmc {

struct MetricKey {
  std::string mode;    ///< "" = the run's primary inference mode; else the mode's metric prefix ("emb", "clf")
  std::string family;  ///< "P", "nDCG", "PSP", "PSnDCG", "R", or any other name
  int k = -1;          ///< -1 when the name has no "@k"

  /// "emb/P@5" -> {"emb", "P", 5}; "P@5" -> {"", "P", 5}; "loss" -> {"", "loss", -1}.
  static MetricKey parse(std::string_view name);
  /// The stored name (inverse of parse()).
  std::string str() const;

  bool is_primary() const { return mode.empty(); }
  /// The order papers print families in: P, nDCG, PSP, PSnDCG, R, then the rest.
  int family_rank() const;
  bool operator==(const MetricKey&) const = default;
};

}  // namespace xmc
