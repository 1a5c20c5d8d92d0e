#include "engine/model/table_rows.h"

#include <mutex>
#include <unordered_map>

namespace xmc {
namespace {

struct RowReadHooks {
  std::mutex mutex;
  std::unordered_map<const void*, RowReadHook> by_table;
};

RowReadHooks& row_read_hooks() {
  static RowReadHooks hooks;
  return hooks;
}

/// index_select whose backward hands the table a sparse gradient over the (ascending, distinct) rows it
/// picked, marked coalesced: gradients of several picks then add up by merging sorted rows, not by piling up
/// entries. (LibTorch 1.13 drops the mark when it stores a gradient; optim/sparse_gradient.h puts it back after
/// one look at the row numbers.)
struct DistinctRowGather : public torch::autograd::Function<DistinctRowGather> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& table, const torch::Tensor& distinct) {
    ctx->saved_data["distinct"] = distinct;
    ctx->saved_data["sizes"] = table.sizes().vec();
    return table.index_select(0, distinct);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    const torch::Tensor distinct = ctx->saved_data["distinct"].toTensor();
    const std::vector<std::int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    const torch::Tensor& grad = grad_outputs[0];
    // The rows are valid by construction (the forward's index_select took them), so the checked constructor's
    // scan of the indices (a max and a min per call) is skipped.
    torch::Tensor sparse = torch::_sparse_coo_tensor_unsafe(distinct.unsqueeze(0), grad.contiguous(), sizes, grad.options());
    sparse._coalesced_(true);
    return {sparse, torch::Tensor()};
  }
};

}  // namespace

bool sparse_rows_gradient(const torch::Tensor& table) {
  return table.device().is_cpu() && table.dim() == 2 && table.requires_grad() && torch::GradMode::is_enabled();
}

void set_row_read_hook(const void* table, RowReadHook hook) {
  RowReadHooks& hooks = row_read_hooks();
  const std::lock_guard<std::mutex> lock(hooks.mutex);
  if (hook) hooks.by_table[table] = std::move(hook);
  else hooks.by_table.erase(table);
}

void before_reading_rows(const torch::Tensor& table, const torch::Tensor& rows) {
  RowReadHooks& hooks = row_read_hooks();
  RowReadHook hook;
  {
    const std::lock_guard<std::mutex> lock(hooks.mutex);
    if (hooks.by_table.empty()) return;
    const auto found = hooks.by_table.find(table.unsafeGetTensorImpl());
    if (found == hooks.by_table.end()) return;
    hook = found->second;
  }
  hook(rows);
}

torch::Tensor distinct_table_rows(const torch::Tensor& table, const torch::Tensor& distinct) {
  before_reading_rows(table, distinct);
  if (!sparse_rows_gradient(table)) return table.index_select(0, distinct);
  // The gradient is marked coalesced on the caller's word: rows out of order or repeated would be updated twice.
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(distinct.numel() < 2 || (distinct.slice(0, 1) > distinct.slice(0, 0, -1)).all().item<bool>());
  return DistinctRowGather::apply(table, distinct);
}

torch::Tensor table_rows(const torch::Tensor& table, const torch::Tensor& rows) {
  if (!rows.defined()) {
    before_reading_rows(table);
    return table;
  }
  if (!sparse_rows_gradient(table)) {
    before_reading_rows(table, rows);
    return table.index_select(0, rows);
  }
  const auto [distinct, slot] = torch::_unique(rows, /*sorted=*/true, /*return_inverse=*/true);
  return distinct_table_rows(table, distinct).index_select(0, slot);
}

}  // namespace xmc
