#pragma once
// Compressed sparse rows: the in-memory form of label matrices (rows = points, cols = labels) and of
// sparse bag-of-words features. Column indices within a row are sorted and unique.
#include <cstdint>
#include <span>
#include <vector>

namespace xmc {

struct CsrMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int64_t> indptr{0};  ///< size rows + 1
  std::vector<std::int32_t> indices;    ///< size nnz, column of each entry
  std::vector<float> values;            ///< size nnz

  std::int64_t nnz() const { return static_cast<std::int64_t>(indices.size()); }
  std::span<const std::int32_t> row_indices(std::int64_t row) const {
    return {indices.data() + indptr[row], static_cast<std::size_t>(indptr[row + 1] - indptr[row])};
  }
  std::span<const float> row_values(std::int64_t row) const {
    return {values.data() + indptr[row], static_cast<std::size_t>(indptr[row + 1] - indptr[row])};
  }
  std::int64_t row_size(std::int64_t row) const { return indptr[row + 1] - indptr[row]; }

  /// Appends one row; `cols` must be sorted, unique and < this->cols (checked by the readers).
  void append_row(std::span<const std::int32_t> row_cols, std::span<const float> row_vals);

  /// Number of non-zeros in each column (label frequencies for a label matrix).
  std::vector<std::int64_t> column_counts() const;
};

/// Builds a matrix from per-row column lists (values 1); sorts and de-duplicates each row.
CsrMatrix csr_from_rows(const std::vector<std::vector<std::int32_t>>& rows, std::int64_t cols);

}  // namespace xmc
