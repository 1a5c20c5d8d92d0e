#include "widgets/runs/group_summary_model.h"

#include <QAbstractProxyModel>
#include <cmath>
#include <map>

#include "widgets/plots/mean_and_sd.h"
#include "widgets/runs/run_table_model.h"

namespace xmc::gui {

GroupSummaryModel::GroupSummaryModel(RunTableModel* table, QAbstractProxyModel* runs, QObject* parent)
    : QAbstractTableModel(parent), table_(table), runs_(runs) {
  recompute();
}

void GroupSummaryModel::recompute() {
  beginResetModel();
  groups_.clear();
  metrics_.clear();
  if (table_ && runs_ && !table_->group_key().isEmpty()) {
    for (int section = 0; section < table_->columnCount(); ++section)
      if (const QString m = table_->metric_of_section(section); !m.isEmpty()) metrics_.append(m);
    std::map<QString, std::vector<std::int64_t>> members;  // groups in name order, as the table sorts them
    for (int r = 0; r < runs_->rowCount(); ++r) {
      const std::int64_t run = table_->run_id(runs_->mapToSource(runs_->index(r, 0)));
      if (const RunInfo* info = run >= 0 ? table_->run_info(run) : nullptr) members[table_->group_of(*info)].push_back(run);
    }
    for (const auto& [name, runs] : members) {
      Group g;
      g.name = name;
      g.runs = static_cast<int>(runs.size());
      std::vector<std::vector<double>> values(static_cast<std::size_t>(metrics_.size()));
      for (const std::int64_t run : runs) {
        if (table_->run_info(run)->status != RunStatus::Completed) continue;
        ++g.completed;
        for (int m = 0; m < metrics_.size(); ++m)
          if (const double v = table_->metric_value_of(run, metrics_[m]); !std::isnan(v)) values[static_cast<std::size_t>(m)].push_back(v);
      }
      for (const auto& v : values) {
        const MeanAndSd spread = mean_and_sd(v);
        g.metrics.push_back({.mean = spread.mean, .sd = spread.sd, .count = static_cast<int>(v.size())});
      }
      groups_.push_back(std::move(g));
    }
  }
  endResetModel();
}

int GroupSummaryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(groups_.size()); }

int GroupSummaryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 2 + static_cast<int>(metrics_.size()); }

QVariant GroupSummaryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Group& g = groups_[static_cast<std::size_t>(index.row())];
  if (index.column() == 0) return role == Qt::DisplayRole || role == Qt::ToolTipRole ? QVariant(g.name) : QVariant();
  if (index.column() == 1) {
    if (role == Qt::DisplayRole) return g.completed == g.runs ? QString::number(g.runs) : tr("%1 of %2").arg(g.completed).arg(g.runs);
    if (role == Qt::ToolTipRole) return tr("%1 runs, %2 completed: the means are over the completed ones").arg(g.runs).arg(g.completed);
    if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    return {};
  }
  const Stat& s = g.metrics[static_cast<std::size_t>(index.column() - 2)];
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DisplayRole) {
    if (s.count == 0) return QString();
    const QString mean = QString::number(100 * s.mean, 'f', 2);
    return s.count == 1 ? tr("%1 (1 run)").arg(mean) : QStringLiteral("%1 ± %2").arg(mean, QString::number(100 * s.sd, 'f', 2));
  }
  if (role == Qt::ToolTipRole && s.count > 0)
    return tr("%1 over %2 completed runs: mean %3 %, sample sd %4").arg(metrics_[index.column() - 2]).arg(s.count)
        .arg(100 * s.mean, 0, 'f', 3).arg(s.count > 1 ? QString::number(100 * s.sd, 'f', 3) : tr("— (one run)"));
  return {};
}

QVariant GroupSummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  if (section == 0) return table_ ? tr("Group: %1").arg(table_->group_key()) : tr("Group");
  if (section == 1) return tr("Runs");
  if (section - 2 < metrics_.size()) return tr("%1 (%, mean ± sd)").arg(metrics_[section - 2]);
  return {};
}

}  // namespace xmc::gui
