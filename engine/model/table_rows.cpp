#include "engine/model/table_rows.h"

namespace xmc {

torch::Tensor table_rows(const torch::Tensor& table, const torch::Tensor& rows) {
  const bool sparse_gradient = table.device().is_cpu() && table.dim() == 2 && table.requires_grad() && torch::GradMode::is_enabled();
  if (!sparse_gradient) return table.index_select(0, rows);
  return torch::embedding(table, rows, /*padding_idx=*/-1, /*scale_grad_by_freq=*/false, /*sparse=*/true);
}

}  // namespace xmc
