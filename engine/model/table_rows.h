#pragma once
// Engine-internal (includes torch). Rows of a trained table (a per-label classifier or residual), picked so
// that on the CPU the table's gradient is row-sparse: only the picked rows, not a zeroed copy of the whole
// table per step for the optimiser and the clipping to read (the gradient of index_select).
#include <torch/torch.h>

namespace xmc {

/// table.index_select(0, rows), with a sparse gradient for a CPU table that is being trained. `rows`: int64.
torch::Tensor table_rows(const torch::Tensor& table, const torch::Tensor& rows);

}  // namespace xmc
