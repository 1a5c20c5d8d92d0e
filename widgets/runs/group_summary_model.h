#pragma once
// GroupSummaryModel: one row per group of the Runs table (RunTableModel::set_group_key; "seeds" gathers
// runs whose configs differ only in the seed): how many runs it has, and for every metric column of the
// table the mean ± sample standard deviation over its completed runs — the row a paper publishes. Runs
// that failed, stopped or still run are counted but never averaged. It follows the table: the runs the
// filter shows, the final or best values the table shows, the metric columns the user added.
#include <QAbstractTableModel>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <vector>

class QAbstractProxyModel;

namespace xmc::gui {

class RunTableModel;

class GroupSummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  /// `runs` lists the runs (`table`, or a filter over it).
  GroupSummaryModel(RunTableModel* table, QAbstractProxyModel* runs, QObject* parent = nullptr);

  /// Recomputes every group (the table calls for it when its runs, values or columns change).
  void recompute();

  /// One metric over a group's completed runs (fractions; sd NaN below two runs).
  struct Stat {
    double mean = 0, sd = 0;
    int count = 0;
  };
  struct Group {
    QString name;
    int runs = 0, completed = 0;
    std::vector<Stat> metrics;  ///< one per metrics() entry
  };
  const std::vector<Group>& groups() const { return groups_; }
  const QStringList& metrics() const { return metrics_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QPointer<RunTableModel> table_;
  QPointer<QAbstractProxyModel> runs_;
  QStringList metrics_;
  std::vector<Group> groups_;
};

}  // namespace xmc::gui
