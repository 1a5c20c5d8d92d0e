#include "engine/data/csr_rows.h"

#include <string>

#include "engine/core/error.h"

namespace xmc {

CsrMatrix csr_rows(const CsrMatrix& matrix, std::span<const std::int64_t> rows) {
  CsrMatrix out;
  out.cols = matrix.cols;
  for (const std::int64_t r : rows) {
    if (r < 0 || r >= matrix.rows) throw Error("row " + std::to_string(r) + " is outside the matrix's " + std::to_string(matrix.rows) + " rows");
    out.append_row(matrix.row_indices(r), matrix.row_values(r));
  }
  return out;
}

CsrMatrix csr_row_range(const CsrMatrix& matrix, std::int64_t begin, std::int64_t end) {
  if (begin < 0 || end < begin || end > matrix.rows)
    throw Error("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") are outside the matrix's " + std::to_string(matrix.rows) + " rows");
  CsrMatrix out;
  out.cols = matrix.cols;
  for (std::int64_t r = begin; r < end; ++r) out.append_row(matrix.row_indices(r), matrix.row_values(r));
  return out;
}

}  // namespace xmc
