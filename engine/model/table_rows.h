#pragma once
// Engine-internal (includes torch). Rows of a trained table (word vectors, a per-label classifier or
// residual), picked so that on the CPU the table's gradient is row-sparse and already coalesced: one entry per
// picked row, ascending — not a zeroed copy of the whole table per call (index_select's gradient), nor one
// entry per occurrence to be sorted and summed afterwards (embedding's sparse gradient).
#include <torch/torch.h>

#include <functional>

namespace xmc {

/// table.index_select(0, distinct): `distinct` ascending, without repeats (int64). For a CPU table being
/// trained, the table's gradient is a coalesced sparse tensor over exactly those rows.
torch::Tensor distinct_table_rows(const torch::Tensor& table, const torch::Tensor& distinct);

/// table.index_select(0, rows) for any int64 rows (repeats allowed, any order), with the same gradient: a
/// row picked several times gets the sum of its picks' gradients. Undefined rows: the whole table.
torch::Tensor table_rows(const torch::Tensor& table, const torch::Tensor& rows);

/// Whether a picked table gets the row-sparse gradient: on the CPU, while it is being trained.
bool sparse_rows_gradient(const torch::Tensor& table);

/// What must happen before rows of a table are read: an optimiser that deferred the updates of some rows
/// (optim/fused_adamw.h) applies them. `rows` are int64 row numbers, or undefined for every row.
using RowReadHook = std::function<void(const torch::Tensor& rows)>;
/// Sets (or, with an empty hook, removes) the hook of the table whose TensorImpl is `table`.
void set_row_read_hook(const void* table, RowReadHook hook);
/// Runs the table's hook, if it has one, for `rows` (undefined: all of them). table_rows() and
/// distinct_table_rows() call it.
void before_reading_rows(const torch::Tensor& table, const torch::Tensor& rows = {});

}  // namespace xmc
