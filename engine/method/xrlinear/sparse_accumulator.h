#pragma once
// xrlinear's sparse sums over a wide feature space (plain C++).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/data/csr_matrix.h"

namespace xmc {

/// A dense vector of F doubles of which few entries are non-zero, cleared in time proportional to those: the
/// centroids of the label tree's splits and the sums of PIFA's label vectors.
class SparseAccumulator {
 public:
  explicit SparseAccumulator(std::int64_t dim) : values_(static_cast<std::size_t>(dim), 0.0), seen_(static_cast<std::size_t>(dim), 0) {}
  void add(std::span<const std::int32_t> cols, std::span<const float> vals, double scale = 1.0) {
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const auto c = static_cast<std::size_t>(cols[i]);
      if (!seen_[c]) {
        seen_[c] = 1;
        touched_.push_back(cols[i]);
      }
      values_[c] += vals[i] * scale;
    }
  }
  void normalize() {
    double norm = 0;
    for (const std::int32_t c : touched_) norm += values_[static_cast<std::size_t>(c)] * values_[static_cast<std::size_t>(c)];
    if (norm <= 0) return;
    const double scale = 1.0 / std::sqrt(norm);
    for (const std::int32_t c : touched_) values_[static_cast<std::size_t>(c)] *= scale;
  }
  double dot(std::span<const std::int32_t> cols, std::span<const float> vals) const {
    double out = 0;
    for (std::size_t i = 0; i < cols.size(); ++i) out += values_[static_cast<std::size_t>(cols[i])] * vals[i];
    return out;
  }
  /// Appends the sum as a row of `out`, its columns ascending and scaled to unit length (an all-zero sum stays
  /// zero), and clears it.
  void append_normalized_row(CsrMatrix& out) {
    std::sort(touched_.begin(), touched_.end());
    normalize();
    std::vector<float> row(touched_.size());
    for (std::size_t i = 0; i < touched_.size(); ++i) row[i] = static_cast<float>(values_[static_cast<std::size_t>(touched_[i])]);
    out.append_row(touched_, row);
    clear();
  }
  void clear() {
    for (const std::int32_t c : touched_) {
      values_[static_cast<std::size_t>(c)] = 0;
      seen_[static_cast<std::size_t>(c)] = 0;
    }
    touched_.clear();
  }

 private:
  std::vector<double> values_;
  std::vector<char> seen_;
  std::vector<std::int32_t> touched_;
};

}  // namespace xmc
