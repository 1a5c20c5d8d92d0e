#include "widgets/runs/run_filter_proxy.h"

#include "widgets/runs/run_table_model.h"

namespace xmc::gui {

RunFilterProxy::RunFilterProxy(RunTableModel* model, QObject* parent) : QSortFilterProxyModel(parent), model_(model) { setSourceModel(model); }

void RunFilterProxy::set_expression(std::optional<RunFilter> filter) {
  expression_ = std::move(filter);
  invalidateFilter();
}

bool RunFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  if (!expression_) return QSortFilterProxyModel::filterAcceptsRow(source_row, source_parent);
  return model_->passes(model_->run_id(model_->index(source_row, 0, source_parent)), *expression_);
}

}  // namespace xmc::gui
