#pragma once
// The Runs table's filter: words found in a run's name, method, dataset, status, tags or notes (the proxy's fixed
// string), or an expression over its fields, config and metrics (engine/records/run_filter.h) once one is set.
#include <QSortFilterProxyModel>
#include <optional>

#include "engine/records/run_filter.h"

namespace xmc::gui {

class RunTableModel;

class RunFilterProxy final : public QSortFilterProxyModel {
 public:
  RunFilterProxy(RunTableModel* model, QObject* parent);

  /// Shows the runs `filter` lets through; none (nullopt): the fixed string filters again.
  void set_expression(std::optional<RunFilter> filter);

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  RunTableModel* model_;
  std::optional<RunFilter> expression_;
};

}  // namespace xmc::gui
