#include "engine/method/xrlinear/pifa.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/core/error.h"

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
  std::vector<double> sum(static_cast<std::size_t>(features.cols), 0.0);
  std::vector<char> is_touched(static_cast<std::size_t>(features.cols), 0);
  std::vector<std::int32_t> touched;
  std::vector<float> values;
  for (std::int64_t l = 0; l < labels.cols; ++l) {
    touched.clear();
    for (std::int64_t k = column_start[static_cast<std::size_t>(l)]; k < column_start[static_cast<std::size_t>(l) + 1]; ++k) {
      const std::int64_t row = rows_of[static_cast<std::size_t>(k)];
      const auto cols = features.row_indices(row);
      const auto vals = features.row_values(row);
      double norm = 0;
      for (const float v : vals) norm += static_cast<double>(v) * v;
      if (norm <= 0) continue;
      const double scale = 1.0 / std::sqrt(norm);
      for (std::size_t i = 0; i < cols.size(); ++i) {
        const auto c = static_cast<std::size_t>(cols[i]);
        if (!is_touched[c]) {
          is_touched[c] = 1;
          touched.push_back(cols[i]);
        }
        sum[c] += vals[i] * scale;
      }
    }
    std::sort(touched.begin(), touched.end());
    double norm = 0;
    for (const std::int32_t c : touched) norm += sum[static_cast<std::size_t>(c)] * sum[static_cast<std::size_t>(c)];
    const double scale = norm > 0 ? 1.0 / std::sqrt(norm) : 0.0;
    values.clear();
    for (const std::int32_t c : touched) {
      values.push_back(static_cast<float>(sum[static_cast<std::size_t>(c)] * scale));
      sum[static_cast<std::size_t>(c)] = 0.0;
      is_touched[static_cast<std::size_t>(c)] = 0;
    }
    out.append_row(touched, values);
  }
  return out;
}

}  // namespace xmc
