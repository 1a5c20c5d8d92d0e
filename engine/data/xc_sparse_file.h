#pragma once
// The Extreme Classification Repository sparse text format used for label matrices (`trn_X_Y.txt`),
// BoW features (`trn_X_Xf.txt`) and score files (`xmc predict --out`):
//   line 1: "ROWS COLS"; then one line per row of space-separated "index:value" pairs;
//   an empty line is a row without entries; lines starting with '#' are comments.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/core/line_reader.h"
#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

/// Streams rows one at a time, so a 1M-row file never has to be held in memory.
/// Every malformed line, out-of-range index or row-count mismatch throws InputError with file:line.
class XcSparseReader {
 public:
  explicit XcSparseReader(const std::filesystem::path& path);

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t rows_read() const { return rows_read_; }
  double fraction_read() const;

  /// Reads the next row into (indices, values), sorted by index; false after the last row.
  bool next(std::vector<std::int32_t>& indices, std::vector<float>& values);

 private:
  LineReader reader_;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::int64_t rows_read_ = 0;
  std::vector<std::pair<std::int32_t, float>> scratch_;
};

/// Reads a whole file into a CsrMatrix.
CsrMatrix read_xc_sparse(const std::filesystem::path& path, Progress& progress = silent_progress());

/// Writes `m` in the XC format (through a temporary file renamed into place).
void write_xc_sparse(const std::filesystem::path& path, const CsrMatrix& m);

}  // namespace xmc
