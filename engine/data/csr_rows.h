#pragma once
// Some rows of a sparse matrix as a matrix of their own (a development split's queries, a rank's slice of the
// training queries, the queries an approximate shortlist is checked on). Plain C++.
#include <cstdint>
#include <span>

#include "engine/data/csr_matrix.h"

namespace xmc {

/// Rows `rows` of `matrix`, in that order (repeats allowed); the columns are kept. Throws Error for a row outside.
CsrMatrix csr_rows(const CsrMatrix& matrix, std::span<const std::int64_t> rows);

/// Rows [begin, end) of `matrix`. Throws Error for a range outside it.
CsrMatrix csr_row_range(const CsrMatrix& matrix, std::int64_t begin, std::int64_t end);

}  // namespace xmc
