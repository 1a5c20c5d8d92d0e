#include "engine/data/csr_matrix.h"

#include <algorithm>

namespace xmc {

void CsrMatrix::append_row(std::span<const std::int32_t> row_cols, std::span<const float> row_vals) {
  indices.insert(indices.end(), row_cols.begin(), row_cols.end());
  values.insert(values.end(), row_vals.begin(), row_vals.end());
  indptr.push_back(static_cast<std::int64_t>(indices.size()));
  ++rows;
}

std::vector<std::int64_t> CsrMatrix::column_counts() const {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(cols), 0);
  for (std::int32_t c : indices) ++counts[static_cast<std::size_t>(c)];
  return counts;
}

CsrMatrix csr_from_rows(const std::vector<std::vector<std::int32_t>>& rows, std::int64_t cols) {
  CsrMatrix m;
  m.cols = cols;
  std::vector<std::int32_t> sorted;
  std::vector<float> ones;
  for (const auto& row : rows) {
    sorted = row;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    ones.assign(sorted.size(), 1.0f);
    m.append_row(sorted, ones);
  }
  return m;
}

}  // namespace xmc
