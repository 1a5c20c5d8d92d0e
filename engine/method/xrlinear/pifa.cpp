#include "engine/method/xrlinear/pifa.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/core/error.h"
#include "engine/method/xrlinear/sparse_accumulator.h"

namespace xmc {

CsrMatrix pifa_label_vectors(const CsrMatrix& labels, const CsrMatrix& features) {
  if (labels.rows != features.rows)
    throw Error("PIFA: the label matrix has " + std::to_string(labels.rows) + " rows but the features " + std::to_string(features.rows));
  // The training queries of every label (the label matrix's columns).
  std::vector<std::int64_t> column_start(static_cast<std::size_t>(labels.cols) + 1, 0);
  for (const std::int32_t l : labels.indices) ++column_start[static_cast<std::size_t>(l) + 1];
  for (std::size_t l = 0; l < static_cast<std::size_t>(labels.cols); ++l) column_start[l + 1] += column_start[l];
  std::vector<std::int64_t> rows_of(labels.indices.size());
  std::vector<std::int64_t> fill(column_start.begin(), column_start.end() - 1);
  for (std::int64_t row = 0; row < labels.rows; ++row)
    for (const std::int32_t l : labels.row_indices(row)) rows_of[static_cast<std::size_t>(fill[static_cast<std::size_t>(l)]++)] = row;

  CsrMatrix out;
  out.rows = 0;
  out.cols = features.cols;
  SparseAccumulator sum(features.cols);
  for (std::int64_t l = 0; l < labels.cols; ++l) {
    for (std::int64_t k = column_start[static_cast<std::size_t>(l)]; k < column_start[static_cast<std::size_t>(l) + 1]; ++k) {
      const std::int64_t row = rows_of[static_cast<std::size_t>(k)];
      const auto vals = features.row_values(row);
      double norm = 0;
      for (const float v : vals) norm += static_cast<double>(v) * v;
      if (norm > 0) sum.add(features.row_indices(row), vals, 1.0 / std::sqrt(norm));
    }
    sum.append_normalized_row(out);
  }
  return out;
}

}  // namespace xmc
